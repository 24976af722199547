"""``python -m keyramp.targets.proxy --store S --upstream HOST:PORT [--listen HOST:PORT]
[--config JSON] [--exit-with PID]``: one store proxy (``keyramp.targets._proxy``) in its own
process (``ProxyProcess`` starts it; docs/fidelity.md).

Prints ``listening HOST:PORT`` once it serves, then runs until SIGTERM or SIGINT. The entry
point lives in the target layer, with the proxy: ``ProxyProcess`` starts this module, never a CLI
module above it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
from collections.abc import Callable, Coroutine, Sequence
from typing import Any

from keyramp.backends import spec_for
from keyramp.core import exit_code, parse_flags
from keyramp.targets._proxy import StoreProxy
from keyramp.targets._proxy_model import MODEL_TYPES, make_model
from keyramp.targets._proxy_stats import ProxyConfig

try:  # uvloop's transports read and write in C: about a third less of the proxy's CPU per request
    import uvloop  # (docs/performance.md, "The store proxy"); asyncio's own loop without it

    _loop_run: Callable[[Coroutine[Any, Any, None]], None] = uvloop.run
except ImportError:  # pragma: no cover - a platform without uvloop (Windows)
    _loop_run = asyncio.run

__all__ = ["main"]

_PROG = "python -m keyramp.targets.proxy"


async def _serve(flags: dict[str, Any], config: ProxyConfig) -> None:
    proxy = StoreProxy(spec=spec_for(flags["store"]), upstream=flags["upstream"], make_model=make_model,
                       types=MODEL_TYPES, config=config)
    listen = flags.get("listen", "127.0.0.1:0")
    port = await proxy.start(listen)
    print(f"listening {listen.rpartition(':')[0]}:{port}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    parent = flags.get("exit_with", 0)
    watcher = loop.create_task(_watch(parent, stop)) if parent else None
    await stop.wait()
    if watcher is not None:
        watcher.cancel()
    await proxy.stop()


async def _watch(parent: int, stop: asyncio.Event) -> None:
    """A run's own proxy ends with the run, even one killed outright (SIGKILL leaves no clean-up)."""
    while os.getppid() == parent:
        await asyncio.sleep(1.0)
    stop.set()


def _run(argv: Sequence[str]) -> int:
    flags = parse_flags(argv, prog=_PROG, required=frozenset({"store", "upstream"}),
                        values={"store": str, "upstream": str, "listen": str, "config": json.loads,
                                "exit-with": int})
    config = ProxyConfig.from_json(flags.get("config", {}))
    with contextlib.suppress(KeyboardInterrupt):
        _loop_run(_serve(flags, config))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    return exit_code(lambda: _run(sys.argv[1:] if argv is None else argv))


if __name__ == "__main__":
    raise SystemExit(main())
