"""``python -m keyramp.cli._proxy --store S --upstream HOST:PORT``: one store proxy
(``keyramp.targets._proxy``) in its own process (``ProxyProcess`` starts it; docs/fidelity.md).

Prints ``listening HOST:PORT`` once it serves, then runs until SIGTERM or SIGINT."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal

from keyramp.backends import spec_for
from keyramp.targets._proxy import StoreProxy
from keyramp.targets._proxy_model import MODEL_TYPES, make_model
from keyramp.targets._proxy_stats import ProxyConfig

__all__ = ["main"]


async def _serve(args: argparse.Namespace, config: ProxyConfig) -> None:
    proxy = StoreProxy(spec=spec_for(args.store), upstream=args.upstream, make_model=make_model, types=MODEL_TYPES,
                       config=config)
    port = await proxy.start(args.listen)
    print(f"listening {args.listen.rpartition(':')[0]}:{port}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    watcher = loop.create_task(_watch(args.exit_with, stop)) if args.exit_with else None
    await stop.wait()
    if watcher is not None:
        watcher.cancel()
    await proxy.stop()


async def _watch(parent: int, stop: asyncio.Event) -> None:
    """A run's own proxy ends with the run, even one killed outright (SIGKILL leaves no clean-up)."""
    while os.getppid() == parent:
        await asyncio.sleep(1.0)
    stop.set()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m keyramp.cli._proxy",
                                     description="a store proxy: the store model in front of an official emulator")
    parser.add_argument("--store", required=True, help="the store's name (its StoreSpec)")
    parser.add_argument("--upstream", required=True, metavar="HOST:PORT", help="the emulator")
    parser.add_argument("--listen", default="127.0.0.1:0", metavar="HOST:PORT")
    parser.add_argument("--config", default="{}", help="the ProxyConfig as JSON")
    parser.add_argument("--exit-with", type=int, default=0, metavar="PID",
                        help="stop when this parent process is gone (a run's own proxy)")
    args = parser.parse_args(argv)
    config = ProxyConfig.from_json(json.loads(args.config))
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(_serve(args, config))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
