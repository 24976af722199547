"""``python -m keyramp.cli._netem --target HOST:PORT``: the latency-injecting proxy of
``keyramp.targets._netem`` in its own process (``LatencyProxy`` starts it; docs/ci.md)."""

from __future__ import annotations

import argparse
import asyncio
import contextlib

from keyramp.targets._netem import serve

__all__ = ["main"]


def _endpoint(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit():
        raise argparse.ArgumentTypeError(f"expected HOST:PORT, got {text!r}")
    return host, int(port)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m keyramp.cli._netem",
                                     description="loopback TCP proxy adding a fixed delay per direction")
    parser.add_argument("--target", type=_endpoint, required=True, metavar="HOST:PORT")
    parser.add_argument("--listen", type=_endpoint, default=("127.0.0.1", 0), metavar="HOST:PORT")
    parser.add_argument("--delay-ms", type=float, default=2.0, help="client -> server delay (default 2)")
    parser.add_argument("--reply-delay-ms", type=float, help="server -> client delay (default: --delay-ms)")
    args = parser.parse_args(argv)
    if args.delay_ms < 0 or (args.reply_delay_ms is not None and args.reply_delay_ms < 0):
        parser.error("delays must be >= 0")
    reply = args.delay_ms if args.reply_delay_ms is None else args.reply_delay_ms
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve(target=args.target, delay_s=args.delay_ms / 1000, reply_delay_s=reply / 1000,
                          listen=args.listen))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
