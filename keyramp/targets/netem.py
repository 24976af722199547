"""``python -m keyramp.targets.netem --target HOST:PORT [--listen HOST:PORT] [--delay-ms MS]
[--reply-delay-ms MS]``: the latency-injecting proxy of ``keyramp.targets._netem`` in its own
process (``LatencyProxy`` starts it; docs/ci.md). It prints ``listening HOST:PORT`` once bound.

The entry point lives in the target layer, with the proxy: ``LatencyProxy`` starts this module,
never a CLI module above it.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import Sequence

from keyramp.core import endpoint, exit_code, parse_flags
from keyramp.targets._netem import serve

__all__ = ["main"]

_PROG = "python -m keyramp.targets.netem"


def _delay(text: str) -> float:
    value = float(text)
    if not value >= 0:
        raise ValueError(f"must be >= 0 ms, got {text}")
    return value


def _serve(argv: Sequence[str]) -> int:
    flags = parse_flags(argv, prog=_PROG, required=frozenset({"target"}),
                        values={"target": endpoint, "listen": endpoint, "delay-ms": _delay, "reply-delay-ms": _delay})
    delay = flags.get("delay_ms", 2.0)
    reply = flags.get("reply_delay_ms", delay)
    with contextlib.suppress(KeyboardInterrupt):  # stopped by its parent: a normal end
        asyncio.run(serve(target=flags["target"], delay_s=delay / 1000, reply_delay_s=reply / 1000,
                          listen=flags.get("listen", ("127.0.0.1", 0))))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    return exit_code(lambda: _serve(sys.argv[1:] if argv is None else argv))


if __name__ == "__main__":
    raise SystemExit(main())
