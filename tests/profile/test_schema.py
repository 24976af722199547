"""The profile schema declared once (keyramp/profile/_schema.py): every declared field is documented,
validated (one line naming the file and the field), applies where it says, and the resolved table it
writes is the wire format older runs and workers read."""

from __future__ import annotations

import copy
import json
import re
import tomllib
from pathlib import Path
from typing import Any

import pytest

from keyramp.backends import STORES, spec_for
from keyramp.core._errors import UsageError
from keyramp.profile import Profile, Settings, parse_profile
from keyramp.profile._checks import MISSING
from keyramp.profile._docs import COMMAND, DOC, _sections, render, replace_reference
from keyramp.profile._launch import CLUSTER_FIELDS, LaunchSettings
from keyramp.profile._schedules import KIND_FIELDS, OPEN_KINDS, PARAMS, SCHEDULES, ScheduleSettings
from keyramp.profile._schema import Option, Section, Sub, stores_with
from keyramp.profile._workload import WorkloadSettings

#: Every section present, Bigtable among the stores (so ``[launch] nodes`` applies).
BASE: dict[str, Any] = {
    "name": "schema",
    "backend": ["firestore", "bigtable"],
    "duration": "5s",
    "workload": {"ops": {"insert": 0.5, "read": 0.3, "query": 0.2}, "query": {"limit": 5}},
    "keys": {"strategy": ["random", "sequential"], "params": {}},
    "schedule": {"kind": "constant", "rate": 100},
    "thresholds": {"error_rate": 0.01},
    "emulator": {"consistency": 1.0},
    "cloud": {"max_ops_per_s": 500},
    "launch": {"kind": "constant", "rate": 1000, "nodes": 2},
}
#: Checked elsewhere: a bad ``user`` imports Locust, which patches the process (tests/pyworkload, in subprocesses).
NOT_HERE = {("workload", "user")}


Where = tuple[str, ...]


def _tables(section: type[Section] = Profile, path: Where = ()) -> list[tuple[type[Section], Where]]:
    """Every section with where it sits in a profile."""
    out = [(section, path)]
    for opt in section.options():
        if isinstance(opt.check, Sub):
            out += _tables(opt.check.section, (*path, opt.toml))
    return out


SECTIONS = _tables()


def _id(value: Any) -> str:
    if isinstance(value, type):
        return value.__name__
    return value.toml if isinstance(value, Option) else ".".join(value) or "top"


def _with(path: tuple[str, ...], name: str, value: Any, base: dict[str, Any] | None = None) -> dict[str, Any]:
    raw = copy.deepcopy(BASE if base is None else base)
    table = raw
    for part in path:
        table = table.setdefault(part, {})
    table[name] = value
    return raw


def _error(raw: dict[str, Any]) -> str:
    with pytest.raises(UsageError) as info:
        parse_profile(raw, source="f.toml")
    message = str(info.value)
    assert message.startswith("f.toml: ") and "\n" not in message, message
    return message


def _names(message: str, path: tuple[str, ...], name: str) -> bool:
    table = ".".join(path)
    if not table:
        return message.startswith(f"f.toml: {name}") or f"'{name}'" in message
    return f"{table}.{name}" in message or f"{table}: {name}" in message


def test_the_base_profile_is_valid() -> None:
    assert len(parse_profile(BASE).cells) == 4


@pytest.mark.parametrize(("section", "path"), SECTIONS, ids=_id)
def test_an_unknown_field_is_an_error_naming_file_and_field(section: type[Section], path: tuple[str, ...]) -> None:
    message = _error(_with(path, "colour_typo", 1))
    assert "colour_typo" in message
    assert message.startswith(f"f.toml: {'.'.join(path)}") if path else message.startswith("f.toml: unknown field")


def _declared() -> list[tuple[tuple[str, ...], Option]]:
    return [(path, opt) for section, path in SECTIONS for opt in section.options()
            if not opt.derived and (path, opt.toml) not in NOT_HERE]


@pytest.mark.parametrize(("path", "opt"), _declared(), ids=_id)
def test_every_declared_field_refuses_bad_values_in_one_line_naming_it(path: tuple[str, ...], opt: Option) -> None:
    assert opt.bad_values(), f"{opt.toml}: declare values its check refuses (Option.bad)"
    # a field that needs a store feature is given where it applies: its value is what is judged
    base = {**BASE, "backend": list(stores_with(opt.needs)), "launch": {"rate": 5}} if opt.needs else None
    for bad in opt.bad_values():
        message = _error(_with(path, opt.toml, bad, base))
        assert _names(message, path, opt.toml) or opt.toml == "thresholds", (bad, message)


#: A valid table of each kind, to which one field at a time is given a bad value.
KIND_BASE = {
    "constant": {"rate": 5}, "soak": {"rate": 5}, "step": {"start_ops": 1, "increment": 1},
    "linear": {"start_ops": 1, "end_ops": 2}, "ramp_500_50_5": {}, "spike": {"rate": 1, "burst_ops": 2},
    "users": {"users": 2},
}


@pytest.mark.parametrize("table", ["schedule", "launch"])
@pytest.mark.parametrize("kind", list(SCHEDULES))
def test_every_rate_field_of_every_kind_is_validated(table: str, kind: str) -> None:
    if table == "launch" and kind not in OPEN_KINDS:
        return
    for name in sorted(KIND_FIELDS[kind]):
        base = {"kind": kind, **({"steps": [1, 2]} if name == "steps" else KIND_BASE[kind])}
        assert parse_profile({**BASE, table: {**base, "nodes": 2} if table == "launch" else base}).cells
        for bad in PARAMS[name].bad_values():
            given = {**base, name: bad}
            message = _error({**BASE, table: given})
            assert f"{table}.{name}" in message, (given, message)


@pytest.mark.parametrize("kind", list(SCHEDULES))
def test_a_field_its_kind_does_not_read_is_an_error(kind: str) -> None:
    control = [o.toml for o in ScheduleSettings.options() if o.kinds is not None]
    for name in sorted((PARAMS.keys() | set(control)) - KIND_FIELDS[kind]):
        if kind in OPEN_KINDS and name in control:
            continue
        message = _error({**BASE, "schedule": {"kind": kind, **KIND_BASE[kind], name: 1}})
        assert f"schedule.{name}: not used by kind '{kind}'" in message
        if kind in OPEN_KINDS:
            message = _error({**BASE, "launch": {"kind": kind, **KIND_BASE[kind], name: 1}})
            assert f"launch.{name}: not a field of a '{kind}' launch" in message


def test_fields_that_do_not_apply_beside_others_are_errors() -> None:
    beside = {"user": "orders.py:Orders", "document": {"room": "string"}}
    for opt in WorkloadSettings.options():
        for other in opt.not_with:  # refused before the workload is imported or the shape parsed
            workload = {other: beside[other], opt.toml: copy.deepcopy(opt.default)}
            message = _error({**BASE, "workload": workload})
            assert f"workload.{opt.toml}: does not apply with workload.{other}" in message
    for name in sorted(CLUSTER_FIELDS):
        message = _error({**BASE, "backend": "firestore", "launch": {"kind": "constant", "rate": 5, name: 1}})
        assert f"launch.{name}: applies to stores with nodes" in message


def test_a_field_beside_a_store_without_the_feature_it_needs_is_an_error() -> None:
    needing = [(path, opt) for path, opt in _declared() if opt.needs]
    # the design: entity groups are ancestor paths in Datastore keys (legacy and Firestore's Datastore mode)
    assert [(".".join((*path, opt.toml)), stores_with(opt.needs)) for path, opt in needing] == [
        ("workload.entity_group_size", ("datastore", "firestore-datastore"))]
    for path, opt in needing:
        for store in STORES.names():
            # given at all, even at its default: a field that does not apply is never silently read
            raw = _with(path, opt.toml, copy.deepcopy(opt.default), {**BASE, "backend": store, "launch": {"rate": 5}})
            if spec_for(store).has(opt.needs):
                assert parse_profile(raw).cells
                continue
            message = _error(raw)
            assert f"f.toml: {'.'.join((*path, opt.toml))}: does not apply to {store}: " in message, message
            assert spec_for(store).why_not(opt.needs) in message
            mixed = _with(path, opt.toml, 2, {**BASE, "backend": ["datastore", store], "launch": {"rate": 5}})
            assert f"does not apply to {store}: " in _error(mixed)  # one store lacking it is enough


def test_every_field_is_documented_in_the_generated_reference() -> None:
    reference = render()
    for section, path in SECTIONS:
        heading = f"### `[{'.'.join(path)}]`" if path else "### Top level"
        assert heading in reference
        part = reference.split(heading, 1)[1].split("\n### ", 1)[0]
        for opt in section.options():
            if not opt.derived:
                assert opt.doc.strip() and opt.check.describe(), f"{opt.toml}: doc and allowed values"
                assert f"| `{opt.toml}` |" in part, f"{opt.toml} missing under {heading}"
    for name, opt in PARAMS.items():
        assert opt.doc and opt.check.describe() and f"| `{name}` |" in reference
    assert [section for section, _ in _sections()] == [section for section, _ in SECTIONS]


def test_docs_profiles_md_is_up_to_date() -> None:
    text = DOC.read_text(encoding="utf-8")
    assert replace_reference(text, render()) == text, f"docs/profiles.md is out of date: run `{COMMAND}`"


def test_the_example_in_docs_profiles_md_loads() -> None:
    block = re.search(r"```toml\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    assert block is not None
    profile = parse_profile(tomllib.loads(block.group(1)), source=str(DOC))
    assert profile.cells and profile.launch is not None


GOLDEN = Path(__file__).parent / "data" / "resolved-profile.json"


def test_the_resolved_table_is_the_wire_format_of_earlier_runs() -> None:
    """``resolved-profile.json`` was written by the loader before the schema was declared (main at
    5052b15): the same profile still resolves to the same table, and that table rebuilds the same
    settings (what a worker and a re-read manifest do). Its raw profile has since lost
    ``workload.entity_group_size = 0`` (the default), refused beside Firestore and Bigtable since issue 29.
    ``launch.plan`` (issue 27) came later: a new profile resolves it to true, an older table reads as false
    (a re-read manifest never plans); so did ``emulator.fidelity``, ``scale`` and ``time_scale`` (issue 38),
    which an older table reads as the emulator as it is."""
    golden = json.loads(GOLDEN.read_text(encoding="utf-8"))
    profile = parse_profile(golden["raw"], source="golden.toml")
    data = json.loads(json.dumps(profile.data))
    assert data["launch"].pop("plan") is True and profile.launch is not None and profile.launch.plan
    assert [data["emulator"].pop(k) for k in ("fidelity", "scale", "time_scale")] == ["emulator", 100.0, "schedule"]
    assert json.dumps(data, sort_keys=True) == json.dumps(golden["resolved"], sort_keys=True)
    rebuilt = Settings.from_data(json.loads(json.dumps(golden["resolved"])))
    assert rebuilt == Settings.from_data(data)
    assert not LaunchSettings.from_data(golden["resolved"]["launch"]).plan
    assert rebuilt.emulator.fidelity == "emulator"
    assert rebuilt.workload.query.paginate == "cursor" and rebuilt.cloud.max_duration_s == 300.0


def test_each_resolved_section_holds_exactly_its_declared_keys() -> None:
    data = parse_profile(BASE).data
    for section, path in SECTIONS:
        table: Any = data
        for part in path:
            table = table[part]
        declared = {o.wire for o in section.options() if o.default is not MISSING or o.wire in table}
        if section is ScheduleSettings or section is LaunchSettings:
            declared |= set(table) & PARAMS.keys()
        if section is LaunchSettings:
            declared |= {"storage"}
        assert set(table) == declared, (path, set(table) ^ declared)


def test_older_resolved_tables_without_later_fields_still_load() -> None:
    data = parse_profile(BASE).data
    for section, path in SECTIONS:
        for opt in section.options():
            if opt.legacy is MISSING or section is LaunchSettings:
                continue
            old = copy.deepcopy(dict(data))
            table: Any = old
            for part in path:
                table = table[part]
            del table[opt.wire]
            settings = Settings.from_data(old)
            value: Any = settings
            for part in path:
                value = getattr(value, {"backend": "backends"}.get(part, part))
            assert getattr(value, opt.attr) == opt.legacy
