"""The store-like target on the official emulators (docs/fidelity.md).

* The official clients through a store proxy (its own process, every request admitted): every
  operation answers as it does on the emulator directly, and what the emulator stores is the
  same; nothing the drivers send fails to decode (``extended``: test_proxy_clients.py holds the
  relay to this on every commit, with more clients, concurrency and large messages).
* ``keyramp run`` with ``fidelity = "store"``: sequential ids throttled at the launch forecast's
  share (within its band), measured through the official client; the run says what it ran against.
  The four-store, 500/50/5 comparison of sequential and random ids is the extended test below.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil
import pytest

from keyramp.backends import BACKENDS, EMULATOR_FOR, Backend, QuerySpec, Target
from keyramp.targets._emulators import RunningEmulator
from keyramp.targets._proxy_process import ProxyProcess, control
from keyramp.targets._proxy_stats import ProxyConfig
from tests._poll import wait_for
from tests._runs import emulator_env, keyramp, only_run_dir

pytestmark = pytest.mark.emulator


@pytest.fixture(scope="module")
def admitting_proxies(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory,
                      ) -> Iterator[Callable[[str], ProxyProcess]]:
    """One admit-all proxy per store, started on first use, stopped after the module."""
    started: dict[str, ProxyProcess] = {}

    def get(store: str) -> ProxyProcess:
        if store not in started:
            kind = EMULATOR_FOR[store]
            emulator: RunningEmulator = request.getfixturevalue(f"{kind.replace('-', '_')}_emulator")
            started[store] = ProxyProcess(store=store, upstream=emulator.endpoint, config=ProxyConfig(mode="admit"),
                                          log_dir=tmp_path_factory.mktemp("proxy")).start()
        return started[store]

    yield get
    for proxy in started.values():
        proxy.stop()


def _mixed(backend: Backend) -> list[Any]:
    """Every operation keyramp's drivers perform, with what each answered."""
    out: list[Any] = [backend.insert(f"k{i:03d}", {"n": i, "s": f"v{i}"}) for i in range(6)]
    out += [backend.read("k001"), backend.read("missing")]
    backend.update("k002", {"n": 20, "s": "updated"})
    backend.batch_write([(f"b{i}", {"n": i, "s": "batch"}) for i in range(3)])
    out += [backend.batch_read(["k000", "b1", "nope"]), backend.scan("k", 4)]
    backend.transaction("k003", "n", 5)
    backend.increment("k004", "n", 2)
    backend.delete("k005")
    out.append(backend.query(QuerySpec(limit=10)))
    return out


def _stored(backend: Backend) -> list[Any]:
    keys = ["k000", "k001", "k002", "k003", "k004", "k005", "b0", "b1", "b2"]
    return [backend.read(k) for k in keys] + [backend.scan("b", 20), backend.batch_read(keys)]


@pytest.mark.extended  # per commit: tests/targets/test_proxy_clients.py (the same relay, in-process, more clients)
@pytest.mark.parametrize("store", ["firestore", "bigtable"])
def test_the_official_client_through_the_proxy_answers_and_stores_as_on_the_emulator(
        store: str, admitting_proxies: Callable[[str], ProxyProcess],
        target_factory: Callable[..., Target]) -> None:
    proxy = admitting_proxies(store)
    answers, stored = [], []
    for endpoint in (proxy.endpoint, proxy.upstream):
        target = target_factory(store, endpoint=endpoint)
        cls = BACKENDS[store]
        cls.prepare(target)
        backend = cls(target)
        try:
            answers.append(_mixed(backend))
        finally:
            backend.close()
        direct = cls(Target(**{**target.__dict__, "endpoint": proxy.upstream}))  # read what the emulator holds
        try:
            stored.append(_stored(direct))
        finally:
            direct.close()
    assert answers[0] == answers[1] and stored[0] == stored[1]
    totals = proxy.stats()["totals"]
    assert totals["undecodable"] == 0 and totals["throttled"] == 0
    assert totals["modelled"] >= 14 and totals["not_modelled"] >= 1  # the query (and transaction bookkeeping)


PROFILE_TEXT = """
name = "store-fidelity-smoke"
backend = "firestore"
driver = "grpc"
duration = "4s"
seed = 3

[workload]
ops = {{ insert = 1.0 }}
record_count = 0
value_size = 32

[keys]
strategy = ["sequential", "random"]

[schedule]
kind = "constant"
rate = 30
time_scale = 10
warmup = "1s"
max_users = 10

[emulator]
fidelity = "store"
scale = 100

[launch]
kind = "constant"
rate = 3000
duration = "10m"
plan = false  # the forecast is what is checked; a plan costs seconds of CPU per cell
"""


@dataclass
class KilledRun:
    summary: dict[str, Any]
    manifest: dict[str, Any]
    report: str
    returncode: int
    stderr: str
    proxy_pid: int


def _second_measured_phase(endpoint: str, seen: list[str]) -> bool:
    """True once the proxy models a second measured phase (store, off, store again) past 20 requests."""
    stats = control(endpoint, "stats")
    mode = stats["config"]["mode"]
    if not seen or seen[-1] != mode:
        seen.append(mode)
    return seen[-3:] == ["store", "off", "store"] and stats["totals"]["modelled"] > 20


@pytest.fixture(scope="module")
def killed_run(firestore_emulator: RunningEmulator, tmp_path_factory: pytest.TempPathFactory) -> KilledRun:
    """One ``keyramp run`` with ``fidelity = "store"``: sequential ids for a whole cell, then random ids
    until the run's proxy is killed in that second cell's measured phase."""
    tmp = tmp_path_factory.mktemp("killed")
    profile = tmp / "p.toml"
    profile.write_text(PROFILE_TEXT.format())
    env = {**emulator_env(firestore_emulator), "KEYRAMP_STATE_DIR": str(tmp / "state")}
    run = subprocess.Popen([sys.executable, "-m", "keyramp", "run", str(profile), "--out", str(tmp / "runs"),
                            "--quiet"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        proxy = wait_for(lambda: next((p for p in psutil.Process(run.pid).children()
                                       if "keyramp.cli._proxy" in " ".join(p.cmdline())), None), "the run's proxy",
                         every=0.2)
        port = wait_for(lambda: next((c.laddr.port for c in proxy.net_connections("tcp")
                                      if c.status == psutil.CONN_LISTEN), None), "its port", every=0.2)
        seen: list[str] = []
        wait_for(lambda: _second_measured_phase(f"127.0.0.1:{port}", seen), "the second cell's measured phase",
                 timeout=120, every=0.2)
        proxy.kill()
        _, stderr = run.communicate(timeout=120)
    finally:
        if run.poll() is None:
            run.kill()
    out = only_run_dir(tmp / "runs")
    return KilledRun(summary=json.loads((out / "summary.json").read_text()),
                     manifest=json.loads((out / "manifest.json").read_text()), report=(out / "report.txt").read_text(),
                     returncode=run.returncode, stderr=stderr, proxy_pid=proxy.pid)


def test_sequential_ids_are_throttled_at_the_forecasts_share_through_the_official_client(
        killed_run: KilledRun) -> None:
    summary = killed_run.summary
    assert summary["target"]["fidelity"] == "store" and killed_run.manifest["target"]["scale"] == 100
    assert "store model at scale 1/100" in killed_run.report
    cell = summary["cells"]["c00-firestore-sequential"]
    model = cell["store_model"]
    measured = cell["total"]["errors"] / cell["total"]["count"]
    band = cell["forecast"]["throttled_fraction"]
    # 30 writes/s on one append point whose range takes 1,000/100 at the mid point: 2/3 refused (the
    # forecast's mid without retries); the band spans the range's capacity (500-2,000 writes/s). The
    # model's clock runs with the schedule's (time_scale 10): its 10-s load window, within which it
    # serves a burst whole, is 1 s of the cell's 4.
    assert set(cell["total"]["errors_by_class"]) == {"RESOURCE_EXHAUSTED"}
    assert model["throttled"] == cell["total"]["errors"] and model["undecodable"] == 0
    assert band["low"] - 0.1 <= measured <= band["high"] + 0.05, (measured, band)
    assert 0.5 <= measured <= 0.8, measured


def test_a_proxy_that_dies_fails_the_cell_naming_it_and_keeps_what_was_recorded(killed_run: KilledRun) -> None:
    assert killed_run.returncode == 1, killed_run.stderr[-2000:]
    summary = killed_run.summary
    assert summary["status"] == "failed"
    reason = summary["reason"]
    assert f"store proxy for firestore (pid {killed_run.proxy_pid}" in reason and "exited" in reason, reason
    cell = summary["cells"]["c01-firestore-random"]
    assert cell["incomplete"] is True and cell["total"]["count"] > 20  # what was recorded is kept
    assert summary["cells"]["c00-firestore-sequential"].get("incomplete") is None


PROFILE = Path(__file__).resolve().parents[2] / "profiles" / "fidelity.toml"


@pytest.mark.extended
@pytest.mark.timeout(3600)
def test_sequential_ids_throttle_at_the_forecasts_share_and_random_ids_under_one_percent(
        datastore_emulator: RunningEmulator, firestore_emulator: RunningEmulator,
        firestore_datastore_emulator: RunningEmulator, bigtable_emulator: RunningEmulator, tmp_path: Path) -> None:
    """profiles/fidelity.toml on the four stores: 500/50/5 to 20,000 ops/s at 1/100, clock x30."""
    env = {**emulator_env(datastore_emulator, firestore_emulator, firestore_datastore_emulator, bigtable_emulator),
           "KEYRAMP_STATE_DIR": str(tmp_path / "state")}
    done = keyramp("run", str(PROFILE), "--out", str(tmp_path / "runs"), "--quiet", env=env, timeout=3000)
    assert done.returncode == 0, done.stderr[-2000:]
    summary = json.loads((only_run_dir(tmp_path / "runs") / "summary.json").read_text())
    shares = {}
    for cell_id, cell in summary["cells"].items():
        measured = cell["store_model"]["throttled_share"] or 0.0
        shares[cell_id] = (round(measured, 4), cell["forecast"]["throttled_fraction"])
    print(json.dumps(shares))  # the figures docs/fidelity.md quotes
    assert len(shares) == 8
    for cell_id, (measured, band) in shares.items():
        if cell_id.endswith("-random"):
            assert measured < 0.01, (cell_id, measured)
        else:
            assert band["low"] - 0.05 <= measured <= band["high"] + 0.05, (cell_id, measured, band)
            assert measured > 0.1, (cell_id, measured)
