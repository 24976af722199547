"""Issue 28: ``self.keys`` hands a Python workload keys its store's official client takes.

The matrix: every store × every key strategy a Python workload may use × key templates (and
Datastore entity groups) × the ``client`` and ``grpc`` drivers. In each cell keyramp's driver
preloads record 0; the workload's own ops then write a new key and read record 0 with the
official client (``self.client`` / ``self.table``), and the driver reads the new key back: one
real emulator write and read each way, so a key in the workload's hands is the same
document, entity or row the drivers write. All cells run in one subprocess (Locust
monkey-patches the interpreter) on the session's emulators.

The order (no emulator): in the form a store orders them (bytes, text, Datastore ids), the
workload's keys sort as the strategy's keys do, and what an op returns samples as the same key.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from keyramp.backends import spec_for
from keyramp.core._types import key_sort_text
from keyramp.keys import STRATEGIES, make_strategy
from keyramp.keys._values import entity_group_key
from keyramp.pyworkload._keys import as_key

#: Every named strategy a Python workload may use (server_allocated is refused there), plus
#: templates covering every kind of part: time first, reverse time, hash, entity, calendar, literal.
TEMPLATES = ("shard(8)#timestamp", "device#reverse_ts", "hash4(user)#user", "tenant#yyyymmddhh#seq",
             "'v1'~reverse(seq)", "bucket(1h)-uuid")
DESIGNS = tuple(n for n, cls in STRATEGIES.items() if not cls.server_allocated) + TEMPLATES
STORES = {"datastore": "Ds", "firestore-datastore": "Ds", "firestore": "Fs", "bigtable": "Bt"}
DRIVERS = ("client", "grpc")
#: Entity groups: Datastore's ancestor paths (both Datastore-API databases).
GROUPED = ("datastore", "firestore-datastore")

MODULE = '''
from google.cloud import datastore
from google.cloud.bigtable.data import SetCell

import keyramp


class Ds(keyramp.DatastoreUser):
    def _key(self, key):
        # an id or a name for client.key(kind, key); an entity-group child's ancestor path as is
        return self.client.key(*key) if isinstance(key, tuple) else self.client.key(self.namespace, key)

    @keyramp.op
    def write(self):
        key = self.keys.new()
        entity = datastore.Entity(self._key(key), exclude_from_indexes=("payload",))
        entity.update(self.document())
        self.client.put(entity, **self.no_retry)
        return key

    @keyramp.op
    def read(self):
        entity = self.client.get(self._key(self.keys.key(0)), **self.no_retry)
        assert entity is not None, "record 0 not found"
        assert entity["payload"] == self.document(0)["payload"], "record 0 differs"
        return entity.key


class Fs(keyramp.FirestoreUser):
    @keyramp.op
    def write(self):
        key = self.keys.new()
        self.client.collection(self.namespace).document(key).set(self.document(), **self.no_retry)
        return key

    @keyramp.op
    def read(self):
        snap = self.client.collection(self.namespace).document(self.keys.key(0)).get(**self.no_retry)
        assert snap.exists, "record 0 not found"
        assert snap.to_dict()["payload"] == self.document(0)["payload"], "record 0 differs"
        return snap.reference


class Bt(keyramp.BigtableUser):
    @keyramp.op
    def write(self):
        key = self.keys.new()
        self.table.mutate_row(key, [SetCell("cf", name, value) for name, value in self.document().items()])
        return key

    @keyramp.op
    def read(self):
        row = self.table.read_row(self.keys.key(0))
        assert row is not None, "record 0 not found"
        assert row.get_cells("cf", b"payload")[0].value == self.document(0)["payload"], "record 0 differs"
        return row.row_key
'''

_SCRIPT = r"""
import json, sys, time, traceback, uuid
import locust  # monkey-patches first, as keyramp run does
from locust.env import Environment
from locust.event import Events
from keyramp.core._types import key_sort_text
from keyramp.backends import spec_for
from keyramp.profile import parse_profile
from keyramp.run._gevent import ensure_gevent_grpc
from keyramp.run._user import CellContext, user_class_for
from keyramp.workload._workload import CellWorkload

ensure_gevent_grpc()
spec = json.loads(sys.argv[1])
endpoints, module = spec["endpoints"], spec["module"]


def cell(profile, c):
    wl = CellWorkload(backend=c.backend, strategy=c.strategy, settings=profile)
    store = spec_for(c.backend)
    driver = store.driver(profile.driver)
    target = wl.target(project="keyramp-test", endpoint=endpoints[c.backend], namespace=f"m{uuid.uuid4().hex[:10]}")
    driver.prepare(target)
    keyramp_side = driver(target)
    try:
        wl.preload(keyramp_side, [0])  # keyramp's driver writes record 0
        ctx = CellContext(workload=wl, backend_class=store.driver(wl.users_driver(profile.driver)), target=target)
        user = user_class_for(ctx)(Environment(events=Events()))
        user.on_start()
        try:
            new_key = user.ops.run("write")  # the workload writes a new key with the official client
            index = user.keys.index
            given = user.keys.key(index)
            read_key = user.ops.run("read")  # ... and reads record 0 with it
        finally:
            user.on_stop()
        found = keyramp_side.read(wl.key_of(index))  # keyramp's driver finds the workload's write
    finally:
        keyramp_side.close()
    return {"type": type(given).__name__, "found": found,
            "sampled_new": key_sort_text(new_key) == key_sort_text(wl.key_of(index)),
            "sampled_read": key_sort_text(read_key) == key_sort_text(wl.key_of(0))}


started = time.perf_counter()
for raw in spec["profiles"]:
    profile = parse_profile(raw["table"], source=raw["path"], path=__import__("pathlib").Path(raw["path"]))
    for c in profile.cells:
        row = {"backend": c.backend, "strategy": c.strategy, "driver": profile.driver,
               "grouped": bool(profile.workload.entity_group_size)}
        try:
            row.update(cell(profile, c))
        except Exception as exc:
            row["error"] = "".join(traceback.format_exception_only(exc)).strip()
        print(json.dumps(row), flush=True)
print(json.dumps({"seconds": round(time.perf_counter() - started, 2)}), flush=True)
"""


def _profiles(tmp: Path) -> list[dict[str, Any]]:
    out = []
    for cls in dict.fromkeys(STORES.values()):
        backends = [b for b, c in STORES.items() if c == cls]
        for driver in DRIVERS:
            for grouped in (False, True) if cls == "Ds" else (False,):
                workload = {"user": f"keys_matrix.py:{cls}", "record_count": 1, "value_size": 16,
                            **({"entity_group_size": 2} if grouped else {})}
                table = {"name": f"keys-{cls}-{driver}", "backend": backends, "driver": driver, "seed": 7,
                         "workload": workload, "keys": {"strategy": list(DESIGNS)}}
                out.append({"path": str(tmp / f"keys-{cls}-{driver}-{grouped}.toml"), "table": table})
    return out


@pytest.fixture(scope="module")
def matrix(tmp_path_factory: pytest.TempPathFactory, datastore_emulator: Any, firestore_emulator: Any,
           firestore_datastore_emulator: Any, bigtable_emulator: Any) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("keys-matrix")
    (tmp / "keys_matrix.py").write_text(MODULE)
    endpoints = {"datastore": datastore_emulator.endpoint, "firestore": firestore_emulator.endpoint,
                 "firestore-datastore": firestore_datastore_emulator.endpoint, "bigtable": bigtable_emulator.endpoint}
    arg = json.dumps({"endpoints": endpoints, "module": str(tmp / "keys_matrix.py"), "profiles": _profiles(tmp)})
    started = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", _SCRIPT, arg], capture_output=True, text=True, timeout=600,
                         check=False)
    assert out.returncode == 0, out.stderr[-3000:]
    lines = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    return {"cells": lines[:-1], "script_s": lines[-1]["seconds"], "wall_s": time.perf_counter() - started}


_TYPES = {"datastore": {"int", "str"}, "firestore-datastore": {"int", "str"}, "firestore": {"str"},
          "bigtable": {"bytes"}}


@pytest.mark.emulator
@pytest.mark.parametrize("store", list(STORES))
@pytest.mark.parametrize("driver", DRIVERS)
def test_every_design_writes_and_reads_through_the_official_client(matrix: dict[str, Any], store: str,
                                                                      driver: str) -> None:
    cells = [c for c in matrix["cells"] if c["backend"] == store and c["driver"] == driver]
    expected = len(DESIGNS) * (2 if store in GROUPED else 1)
    assert len(cells) == expected, [c["strategy"] for c in cells]
    broken = [(c["strategy"], c["grouped"], c.get("error")) for c in cells if "error" in c]
    assert not broken, broken
    for c in cells:
        name = (c["strategy"], c["grouped"])
        assert c["found"], name  # keyramp's driver reads what the workload wrote
        assert c["sampled_new"] and c["sampled_read"], name  # what the ops returned samples as the same key
        assert c["type"] in (_TYPES[store] if not c["grouped"] else {"tuple"}), (name, c["type"])


@pytest.mark.emulator
def test_matrix_size_and_speed(matrix: dict[str, Any]) -> None:
    """Every cell ran (4 stores × 20 designs × 2 drivers + entity groups); the batch is one process."""
    assert len(matrix["cells"]) == len(DESIGNS) * len(DRIVERS) * (len(STORES) + len(GROUPED))
    print(f"keys matrix: {len(matrix['cells'])} cells in {matrix['script_s']} s "
          f"({matrix['wall_s']:.1f} s with the interpreter)")


def _natural(key: Any) -> Any:
    """How the store orders a key in the workload's form: bytes and text by their bytes,
    Datastore ids numerically (ids before names), ancestor paths by parent, then child."""
    if isinstance(key, tuple):
        return tuple(_natural(k) for k in key[1::2])
    if isinstance(key, bytes):
        return (1, key)
    if isinstance(key, int):
        return (0, key.to_bytes(8, "big"))
    return (1, key.encode())


_INDEXES = (0, 1, 2, 8, 9, 10, 11, 98, 99, 100, 101, 999, 1000, 12_345, 99_999, 100_000, 999_999, 1_000_000)


@pytest.mark.parametrize(("store", "group"), [(s, 0) for s in STORES] + [(s, 3) for s in GROUPED])
@pytest.mark.parametrize("design", DESIGNS)
def test_workload_keys_keep_the_strategys_order_and_sample_back(store: str, group: int, design: str) -> None:
    strategy = make_strategy(design, seed=5, backend=store)
    convert = spec_for(store).workload_key

    def key(i: int) -> Any:
        k = strategy.key(i)
        return entity_group_key(k, i, group_size=group) if group else k

    given = {i: convert(key(i), "orders") for i in _INDEXES}
    # The store's order of the workload's keys is the strategy's order (its sort text).
    assert sorted(_INDEXES, key=lambda i: _natural(given[i])) == sorted(_INDEXES, key=lambda i: key_sort_text(key(i)))
    assert len({repr(v) for v in given.values()}) == len(_INDEXES)  # still unique
    for i, value in given.items():  # an op that returns it samples the strategy's key
        assert key_sort_text(as_key(value)) == key_sort_text(key(i)), (i, value)
