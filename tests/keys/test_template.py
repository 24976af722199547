"""Key templates: the best-practice formats as one line, what they imply, and their errors."""

from __future__ import annotations

import collections
import re
from pathlib import Path

import numpy as np
import pytest

from keyramp.backends import store_names
from keyramp.core._errors import UsageError
from keyramp.keys import TemplateError, TemplateStrategy, key_problem, make_strategy
from keyramp.keys._distributions import zeta
from keyramp.keys._strategies import LONG_MAX
from keyramp.profile._files import load_profile
from keyramp.profile._lint import lint_profile
from keyramp.profile._profile import parse_profile

N = 50_000
#: docs/best-practices.md's formats, plus the parts the issue names; each must compile.
FORMATS = {
    "timestamp": r"\d{13}",
    "shard(8)#timestamp": r"[0-7]#\d{13}",
    "device#reverse_ts": r"device\d{4}#\d{19}",
    "hash4(user)#user": r"[0-9a-f]{4}#user\d{8}",
    "tenant#yyyymmddhh#seq": r"tenant\d{4}#20\d{8}#\d{10}",
    "tenant(1000, zipfian)#bucket(1h)#seq": r"tenant\d{4}#\d{13}#\d{10}",
    "reverse(seq)": r"\d{10}",
    "'msg'#room(50,uniform)#uuid": r"msg#room\d{4}#[0-9a-f-]{36}",
    "machine(20)#yyyymmddhhmm#seq(6)": r"machine\d{4}#\d{12}#\d{6}",
}


def keys_of(template: str, n: int = N, **kw: object) -> list[str]:
    s = make_strategy(template, seed=7, **kw)  # type: ignore[arg-type]
    return [s.key(i) for i in range(n)]  # type: ignore[misc]


@pytest.mark.parametrize("template", list(FORMATS))
def test_formats_compile_to_unique_deterministic_keys_of_their_shape(template: str) -> None:
    keys = keys_of(template)
    assert all(re.fullmatch(FORMATS[template], k) for k in keys[:2000]), keys[:3]
    assert len(set(keys)) == N
    assert keys_of(template, 100) == keys_of(template, 100)
    for backend in store_names():  # valid on every store (BP-KEY-10)
        assert key_problem(keys[-1], backend) is None


def test_scattered_parts_follow_the_seed() -> None:
    a, b = make_strategy("hash4(uuid)#uuid", seed=1), make_strategy("hash4(uuid)#uuid", seed=2)
    assert [a.key(i) for i in range(20)] != [b.key(i) for i in range(20)]


@pytest.mark.parametrize(
    ("template", "leads", "points", "prepends", "monotonic", "spreads", "readable"),
    [
        ("timestamp", "time", 1, False, True, False, True),
        ("shard(8)#timestamp", "spread", 8, False, False, True, True),
        ("device#reverse_ts", "spread", 1000, True, False, True, True),
        ("hash4(user)#user", "spread", 65536, False, False, True, False),
        ("tenant#yyyymmddhh#seq", "spread", 1000, False, False, True, True),
        ("yyyymmddhh#seq", "time", 1, False, True, False, True),
        ("reverse_ts#seq", "reverse_time", 1, True, True, False, True),  # one prepend point: monotonic
        ("tenant(20)#yyyymmddhh#seq", "spread", 20, False, False, True, True),  # 20 points that stay put
        ("yyyymmddhh#shard(8)#seq", "time", 1, False, False, False, True),  # one moving region: the newest hour
        ("uuid", "spread", 0, False, False, True, False),
        ("reverse(seq)", "spread", 0, False, False, True, True),
    ],
)
def test_plan_states_what_the_format_implies(template: str, leads: str, points: int, prepends: bool,
                                              monotonic: bool, spreads: bool, readable: bool) -> None:
    s = make_strategy(template)
    assert isinstance(s, TemplateStrategy)
    assert (s.plan.leads_with, s.plan.append_points, s.plan.prepends) == (leads, points, prepends)
    assert (s.traits.monotonic, s.traits.spreads, s.traits.readable) == (monotonic, spreads, readable)


def append_ranges(keys: list[str], window: int = 2000) -> int:
    """How many key ranges the last ``window`` inserts extend: each new key that lands right
    after (or before) the newest key of its run extends that run. Measured on the keys
    themselves, independently of the template's own plan."""
    old, new = sorted(keys[:-window]), keys[-window:]
    texts = np.array(old + new)
    order = np.argsort(texts, kind="stable")
    is_new = order >= len(old)
    # A run: consecutive new keys in sorted order. Appends extend a few long runs; spread keys
    # sit between old keys, so their runs are short (length 1).
    runs, length = [], 0
    for flag in is_new:
        if flag:
            length += 1
        elif length:
            runs.append(length)
            length = 0
    if length:
        runs.append(length)
    return sum(1 for r in runs if r >= window // 100)


@pytest.mark.parametrize(("template", "expected"), [
    ("timestamp", 1), ("shard(8)#timestamp", 8), ("hash4(user)#user", 0), ("uuid", 0),
    ("yyyymmddhh#seq", 1), ("reverse_ts#seq", 1), ("machine(5)#reverse_ts", 5),
])
def test_keys_extend_as_many_ranges_as_the_plan_says(template: str, expected: int) -> None:
    keys = keys_of(template, 20_000)
    assert append_ranges(keys) == expected
    plan = make_strategy(template).plan  # type: ignore[attr-defined]
    assert (plan.append_points if plan.append_points <= 100 else 0) == expected


def test_zipfian_tenant_matches_zipf_frequencies() -> None:
    """The hottest tenant takes 1/zeta(1000, 0.99) of inserts; rank r about 1/(r+1)^0.99 of that."""
    counts = collections.Counter(k.split("#")[0] for k in keys_of("tenant#seq", 200_000))
    top = counts.most_common(3)
    expect = 1 / zeta(1000, 0.99)
    assert top[0][0] == "tenant0000"
    assert top[0][1] / 200_000 == pytest.approx(expect, rel=0.05)
    assert counts["tenant0009"] / counts["tenant0000"] == pytest.approx(10**-0.99, rel=0.15)
    assert len(counts) > 900  # the tail is drawn too


def test_round_robin_and_uniform_entities() -> None:
    rr = collections.Counter(k.split("#")[0] for k in keys_of("device(10)#timestamp", 1000))
    assert set(rr.values()) == {100}
    uni = collections.Counter(k.split("#")[1] for k in keys_of("'x'#room(10, uniform)#seq", 20_000))
    assert len(uni) == 10 and max(uni.values()) / min(uni.values()) < 1.15


def test_time_parts_follow_the_virtual_clock_and_params() -> None:
    s = make_strategy("timestamp#reverse_ts#yyyymmddhh", params={"start_ms": 3_600_000 * 5, "interval_ms": 1000})
    k0, k1 = s.key(0).split("#"), s.key(3600).split("#")
    assert int(k0[0]) == 18_000_000 and int(k1[0]) - int(k0[0]) == 3_600_000
    assert int(k0[1]) == LONG_MAX - int(k0[0])
    assert (k0[2], k1[2]) == ("1970010105", "1970010106")
    assert s.clock is not None and s.clock(3600) == int(k1[0])
    assert make_strategy("uuid").clock is None
    # A per-template sub-table wins over the flat params.
    t = make_strategy("timestamp", params={"interval_ms": 5, "timestamp": {"interval_ms": 2}})
    assert int(t.key(1)) - int(t.key(0)) == 2


def test_a_clock_set_on_the_strategy_moves_every_time_part() -> None:
    """The launch forecast and the reference stream set ``strategy.clock`` to the launch's clock: a
    template's time parts (and the records' ``created``, which share the object) must follow it, as
    the named strategies' do. Before, a template kept its virtual clock: an hour bucket held 3.6
    million inserts whatever the launch's rate."""
    s = make_strategy("tenant(20)#yyyymmddhh#seq#timestamp", seed=1)
    shared = s.clock
    s.clock = lambda i: 1_700_000_000_000 + i * 3_600_000  # an insert an hour
    hours = [s.key(i).split("#")[1] for i in range(3)]
    assert hours == ["2023111422", "2023111423", "2023111500"]
    assert int(s.key(2).split("#")[3]) == 1_700_000_000_000 + 2 * 3_600_000
    assert shared is not None and shared(2) == 1_700_000_000_000 + 2 * 3_600_000
    u = make_strategy("uuid")
    u.clock = lambda i: 7
    assert u.clock is not None and u.clock(0) == 7 and len(u.key(0)) == 36


@pytest.mark.parametrize(
    ("template", "column", "needle"),
    [
        ("shard(8#timestamp", 8, "expected ',' or ')'"),
        ("shard(x)#ts", 7, "shard count"),
        ("tenant#hour", 8, "unknown part 'hour'"),
        ("hash4(user", 11, "expected ')'"),
        ("timestamp#2024", 11, "quote literals"),
        ("ts# seq", 4, "spaces"),
        ("'open#seq", 1, "unterminated literal"),
        ("tenant", 1, "same key"),
        ("'x'", 1, "only literals"),
        ("shard(0)#seq", 7, "shard count"),
        ("hash40(user)", 1, "1 to 16"),
        ("hash4('u')#seq", 7, "expected an argument"),
        ("tenant(10, hot)#seq", 12, "round_robin, uniform, zipfian"),
        ("bucket(soon)#seq", 8, "duration"),
        ("seq(1,2)", 1, "takes 0 to 1 argument,"),
        ("seq?", 4, "unexpected character"),
        ("shard(4)#timestamp", 1, "same key"),  # needs interval_ms × 4 ≥ 1; set below
    ],
)
def test_parse_errors_name_the_column(template: str, column: int, needle: str) -> None:
    params = {"interval_ms": 0.1} if template == "shard(4)#timestamp" else None
    with pytest.raises(TemplateError) as info:
        make_strategy(template, params=params)
    assert info.value.column == column and needle in str(info.value)
    assert f"at column {column}:" in str(info.value) and "\n" not in str(info.value)


def test_unknown_name_mentions_both_readings() -> None:
    with pytest.raises(UsageError, match=r"unknown key strategy 'sequentail' .* not a key template: .*column 1"):
        make_strategy("sequentail")


def test_profile_error_names_file_field_and_column(tmp_path: Path) -> None:
    path = tmp_path / "p.toml"
    path.write_text('name = "t"\n[keys]\nstrategy = ["random", "shard(8#timestamp"]\n')
    with pytest.raises(UsageError) as info:
        load_profile(path)
    assert str(info.value) == (f"{path}: keys.strategy: template 'shard(8#timestamp' at column 8: "
                               "expected ',' or ')'")


def test_profile_cells_for_templates() -> None:
    p = parse_profile({"name": "t", "backend": "bigtable", "keys": {"strategy": ["timestamp", "shard(8)#timestamp"]}})
    assert [c.id for c in p.cells] == ["c00-bigtable-timestamp", "c01-bigtable-shard-8-timestamp"]
    assert p.cells[1].strategy == "shard(8)#timestamp"


def test_lint_reads_what_templates_imply() -> None:
    base = {"name": "t", "backend": ["bigtable", "firestore"], "schedule": {"kind": "constant", "rate": 2000},
            "workload": {"ops": {"insert": 1.0}, "record_count": 0},
            "keys": {"strategy": ["timestamp", "shard(8)#timestamp", "shard(2)#timestamp", "hash4(user)#user"]}}
    findings = lint_profile(parse_profile(base))
    by_cell = collections.defaultdict(set)
    for f in findings:
        by_cell[f.cell].add((f.rule, f.severity))
    assert {("BP-KEY-1", "error"), ("BP-KEY-5", "error")} <= by_cell["c00-bigtable-timestamp"]
    # 500 writes/s an append point is Firestore's (and Datastore's) figure, not Bigtable's.
    assert ("BP-KEY-3", "info") in by_cell["c05-firestore-shard-8-timestamp"]  # 250/s per range
    assert ("BP-KEY-3", "error") in by_cell["c06-firestore-shard-2-timestamp"]  # 1,000/s per range
    assert not any(r == "BP-KEY-3" for cell in ("c01-bigtable-shard-8-timestamp", "c02-bigtable-shard-2-timestamp")
                   for r, _ in by_cell[cell])
    assert not any(r == "BP-KEY-1" for r, _ in by_cell["c01-bigtable-shard-8-timestamp"])
    assert ("BP-KEY-8", "warning") in by_cell["c03-bigtable-hash4-user-user"]


@pytest.mark.parametrize(("template", "points"), [
    ("tenant(20)#yyyymmddhh#seq", 20),  # each tenant appends past its own earlier keys, hour after hour
    ("tenant(20)#bucket(5m)#timestamp", 20),
    ("yyyymmddhh#seq", 1),
    ("yyyymmddhh#shard(8)#seq", None),  # the 8 points start again in each new hour's region
    ("tenant(20)#yyyymmddhh#uuid", None),  # a new region per tenant each hour, spread inside it
])
def test_a_bucket_followed_by_growing_parts_keeps_its_append_points(template: str, points: int | None) -> None:
    s = make_strategy(template)
    assert s.append_points() == points and s.traits.moving == (points is None)
