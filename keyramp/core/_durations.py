"""Parse human durations ("90s", "5m", "1h30m", 2.5) into seconds (core: keys, profile and the
CLI read them)."""

from __future__ import annotations

import re

from keyramp.core._errors import UsageError

__all__ = ["format_duration", "parse_duration"]

_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d)")
_UNIT_S = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def parse_duration(value: object, *, field: str = "duration") -> float:
    """Seconds from a number (seconds) or a string like ``"90s"``, ``"5m"``, ``"1h30m"``."""
    if isinstance(value, bool):
        raise UsageError(f"{field}: expected a duration like '60s', got {value!r}")
    if isinstance(value, (int, float)):
        seconds = float(value)
    elif isinstance(value, str):
        text = value.strip().replace(" ", "")
        pos, seconds = 0, 0.0
        for match in _PART.finditer(text):
            if match.start() != pos:
                break
            seconds += float(match.group(1)) * _UNIT_S[match.group(2)]
            pos = match.end()
        if pos != len(text) or not text:
            raise UsageError(f"{field}: cannot read {value!r} as a duration (use e.g. '90s', '5m', '1h')")
    else:
        raise UsageError(f"{field}: expected a duration like '60s', got {type(value).__name__}")
    if not seconds > 0 or seconds != seconds or seconds == float("inf"):
        raise UsageError(f"{field}: must be a positive duration, got {value!r}")
    return seconds


def format_duration(seconds: float) -> str:
    """Short text for a duration: ``3s``, ``5m``, ``1h30m``, ``250ms``."""
    if seconds < 1:
        return f"{seconds * 1000:.0f}ms"
    whole = round(seconds)
    if abs(seconds - whole) > 0.05:
        return f"{seconds:.1f}s"
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    parts = [f"{hours}h" if hours else "", f"{minutes}m" if minutes else "", f"{secs}s" if secs else ""]
    return "".join(parts) or "0s"
