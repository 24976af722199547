"""Lint by store, and ``[acknowledge]`` (keyramp/profile/_acknowledge.py): a rule applies to the stores
whose guidance it is; a profile may accept a rule's findings with a reason, never silently."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from keyramp.cli._main import main
from keyramp.profile import Profile, parse_profile
from keyramp.profile._acknowledge import applies, lint_rules
from keyramp.profile._lint import Finding, lint_profile
from keyramp.profile._lint_files import lint_files
from keyramp.profile._lint_schedule import SCHEDULE_RULE

#: Faster than 500/50/5: a new key range at 1,000 ops/s, then +100 % every 5 minutes.
FAST_RAMP = {"kind": "ramp_500_50_5", "start_ops": 1000, "growth": 1.0, "step": "300s", "ceiling": 8000,
             "max_users": 20}
REASON = "the plan forecast this ramp throttled 0 % (modelled)"


def profile(backend: str | list[str], strategy: str = "random", schedule: dict[str, Any] | None = None,
            **more: Any) -> Profile:
    return parse_profile({"name": "ack", "backend": backend, "duration": "40m", "workload": {"ops": {"insert": 1.0}},
                          "keys": {"strategy": strategy}, "schedule": schedule or FAST_RAMP, **more})


def by_rule(findings: list[Finding]) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for f in findings:
        out.setdefault(f.rule, set()).add(f.severity)
    return out


def test_500_50_5_and_append_points_at_500_writes_per_s_are_not_bigtable_rules() -> None:
    assert by_rule(lint_profile(profile("firestore")))["BP-RAMP-1"] == {"error"}
    assert "BP-RAMP-1" not in by_rule(lint_profile(profile("bigtable")))
    # Four append points at 4,000 inserts/s: 1,000 each, above Firestore's 500 writes/s, a fraction of a node's.
    steady = {"kind": "constant", "rate": 4000, "max_users": 20}
    assert by_rule(lint_profile(profile("firestore", "shard(4)#seq", steady)))["BP-KEY-3"] == {"error"}
    bigtable = by_rule(lint_profile(profile("bigtable", "shard(4)#seq", steady)))
    assert "BP-KEY-3" not in bigtable and "BP-RAMP-1" not in bigtable
    # Bigtable's own rules still hold: sequential keys hotspot one node.
    assert by_rule(lint_profile(profile("bigtable", "sequential", steady)))["BP-KEY-1"] == {"error"}


def test_a_ramp_finding_on_a_profile_of_several_stores_names_the_cells_it_applies_to() -> None:
    found = [f for f in lint_profile(profile(["firestore", "bigtable"])) if f.rule == "BP-RAMP-1"]
    assert [f.cell for f in found] == ["c00-firestore-random"] and found[0].severity == "error"
    # One store, or every store subject to it: said once for the profile, as before.
    assert [f.cell for f in lint_profile(profile(["firestore", "datastore"])) if f.rule == "BP-RAMP-1"] == [None]


def test_an_acknowledged_rule_is_reported_with_its_reason_and_fails_nothing(tmp_path: Path) -> None:
    found = lint_profile(profile("firestore", acknowledge={"BP-RAMP-1": REASON}))
    (ramp,) = [f for f in found if f.rule == "BP-RAMP-1"]
    assert ramp.severity == "acknowledged" and ramp.message.endswith(f"(error acknowledged: {REASON})")
    assert "1,000 ops/s" in ramp.message or "1000 ops/s" in ramp.message  # what was found, still said
    assert found[-1] is ramp  # after errors, warnings and information
    # Only the rule named: the same profile's other findings are what they were.
    keyed = lint_profile(profile("firestore", "sequential", acknowledge={"BP-RAMP-1": REASON}))
    assert by_rule(keyed)["BP-KEY-1"] == {"error"} and by_rule(keyed)["BP-RAMP-1"] == {"acknowledged"}
    path = tmp_path / "ack.toml"
    path.write_text('name = "ack"\nbackend = "firestore"\nduration = "40m"\n[workload]\nops = {insert = 1.0}\n'
                    '[schedule]\nkind = "ramp_500_50_5"\nstart_ops = 1000\ngrowth = 1.0\nceiling = 8000\n'
                    'max_users = 20\n'
                    f'[acknowledge]\n"BP-RAMP-1" = "{REASON}"\n')
    assert lint_files([path], strict=True).exit_code == 0
    hand_written = tmp_path / "hand.toml"
    hand_written.write_text(path.read_text().split("[acknowledge]")[0])
    assert lint_files([hand_written]).exit_code == 1


@pytest.mark.parametrize(("backend", "acknowledge", "message"), [
    ("firestore", '"BP-NOPE-1" = "why"', "acknowledge.BP-NOPE-1: not a rule keyramp lint checks"),
    ("bigtable", '"BP-RAMP-1" = "why"', "acknowledge.BP-RAMP-1: does not apply to bigtable (lint checks it on "),
    ("firestore", '"BP-KEY-5" = "why"',
     "acknowledge.BP-KEY-5: does not apply to firestore (lint checks it on bigtable)"),
    ("firestore", '"BP-RAMP-1" = " "', "acknowledge.BP-RAMP-1: the reason must be a non-empty string"),
])
def test_an_acknowledgement_that_does_not_apply_is_exit_2_naming_file_and_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], backend: str, acknowledge: str, message: str,
) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(f'name = "bad"\nbackend = "{backend}"\n[acknowledge]\n{acknowledge}\n')
    assert main(["lint", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"keyramp: {path}: {message}") and len(err.splitlines()) == 1, err


def test_every_rule_lint_reports_can_be_acknowledged_where_it_applies() -> None:
    source = (Path(__file__).resolve().parents[2] / "keyramp" / "profile" / "_lint.py").read_text(encoding="utf-8")
    reported = set(re.findall(r'"(BP-[A-Z]+-\d+)"', source)) | {SCHEDULE_RULE}  # keyramp's own too
    assert reported and reported <= set(lint_rules())
    assert applies("BP-RAMP-1", "firestore") and applies("BP-RAMP-1", "datastore")
    assert not applies("BP-RAMP-1", "bigtable") and not applies("BP-KEY-3", "bigtable")
    assert applies("BP-KEY-1", "bigtable") and applies("BP-KEY-5", "bigtable") and not applies("BP-KEY-5", "firestore")
