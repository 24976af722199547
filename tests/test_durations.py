from __future__ import annotations

import pytest

from keyramp.core._durations import format_duration, parse_duration
from keyramp.core._errors import UsageError


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("90s", 90), ("5m", 300), ("1h", 3600), ("1h30m", 5400), ("250ms", 0.25), (2.5, 2.5), (10, 10.0)],
)
def test_parse_duration(text: object, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("bad", ["", "abc", "5 minutes", "-5s", "0s", 0, -1, True, None, "5m3", float("nan")])
def test_parse_duration_rejects(bad: object) -> None:
    with pytest.raises(UsageError) as info:
        parse_duration(bad, field="duration")
    assert "\n" not in str(info.value)
    assert str(info.value).startswith("duration")


def test_format_duration_round_trips() -> None:
    for seconds in (3, 60, 300, 5400, 0.25):
        assert parse_duration(format_duration(seconds)) == pytest.approx(seconds)
