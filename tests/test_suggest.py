"""Unknown names get a "did you mean" and the list of known ones (issue 39), wherever a user types one."""

from __future__ import annotations

import pytest

from keyramp.core._errors import UsageError
from keyramp.core._suggest import close_to, known_names
from keyramp.profile import parse_profile
from keyramp.profile._thresholds import parse_expression


def _profile(**changes: object) -> dict[str, object]:
    data: dict[str, object] = {"name": "t", "backend": "datastore", "duration": 5,
                               "workload": {"ops": {"insert": 1.0}, "record_count": 0},
                               "keys": {"strategy": "random"}, "schedule": {"kind": "constant", "rate": 10}}
    data.update(changes)
    return data


def test_the_closest_names_first_then_every_known_one() -> None:
    assert close_to("raet", ["rate", "kind", "warmup"]) == ["rate"]
    assert close_to("zzz", ["rate", "kind"]) == [] and close_to(3, ["rate"]) == []
    assert known_names("raet", ["kind", "rate"], label="allowed") == "(did you mean 'rate'? allowed: kind, rate)"
    assert known_names("zzz", ["kind", "rate"]) == "(known: kind, rate)"


@pytest.mark.parametrize("changes, words", [
    ({"schedule": {"kind": "constant", "raet": 10}}, "unknown field 'raet' (did you mean 'rate'? allowed: "),
    ({"schedule": {"kind": "constnat", "rate": 10}}, "unknown kind 'constnat' (did you mean 'constant'? one of: "),
    ({"workload": {"ops": {"insrt": 1.0}, "record_count": 0}}, "unknown operation 'insrt' (did you mean 'insert'?"),
    ({"backend": "datastor"}, "(did you mean 'datastore'"),
    ({"wrkload": {}}, "unknown field 'wrkload' (did you mean 'workload'?"),
])
def test_a_profile_typo_gets_a_suggestion(changes: dict[str, object], words: str) -> None:
    with pytest.raises(UsageError, match=None) as exc:
        parse_profile(_profile(**changes))
    assert words in str(exc.value), str(exc.value)


def test_an_unknown_operation_in_a_threshold_lists_the_known_ones() -> None:
    with pytest.raises(UsageError) as exc:
        parse_expression("plce.p99_ms<50", operations={"place", "look", "checkout"})
    assert str(exc.value) == ("threshold 'plce.p99_ms': unknown operation 'plce' (did you mean 'place'? "
                              "operations: checkout, look, place)")
    with pytest.raises(UsageError, match=r"unknown metric 'p99ms' \(did you mean 'p99_ms'"):
        parse_expression("p99ms<50")
