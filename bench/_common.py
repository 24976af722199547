"""Shared bench helpers: machine/version facts, emulators, profiles, JSON results, ``--smoke``.

Every bench records the machine load and versions with its numbers, because the box is
shared and absolute figures are noisy: conclusions come from ratios within one run,
with A/B repetitions interleaved.

Every bench has ``main(argv)`` and ``--smoke``: every code path of the bench in seconds, at
toy sizes, never patching keyramp (public hooks only); ``tests/bench/test_bench_smoke.py`` runs them all so
that a bench cannot rot. A smoke run's figures mean nothing.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as _dt
import json
import os
import platform
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
#: Where the JSON goes; ``KEYRAMP_BENCH_RESULTS`` moves it (the smoke test leaves bench/results alone).
RESULTS = Path(os.environ.get("KEYRAMP_BENCH_RESULTS") or ROOT / "bench" / "results")
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from keyramp.profile._files import write_profile  # noqa: E402  (re-exported for the benches)
from keyramp.targets._emulators import EMULATORS, EmulatorManager, RunningEmulator  # noqa: E402

__all__ = [
    "ENV_FOR_KIND",
    "RESULTS",
    "ROOT",
    "emulators",
    "env_for",
    "machine",
    "median",
    "parse_args",
    "save",
    "table",
    "write_profile",
]

# The standard variable per emulator kind, from the emulator registry.
ENV_FOR_KIND = {kind: spec.env_var for kind, spec in EMULATORS.items()}
_PACKAGES = ("locust", "gevent", "grpcio", "protobuf", "hdrhistogram", "google-cloud-datastore",
             "google-cloud-bigtable", "google-cloud-firestore", "numpy")


def machine() -> dict[str, Any]:
    """Host facts to store next to every figure (load average is sampled now)."""
    versions = {"python": platform.python_version()}
    for name in _PACKAGES:
        with contextlib.suppress(metadata.PackageNotFoundError):
            versions[name] = metadata.version(name)
    sdk = Path("/usr/lib/google-cloud-sdk/VERSION")
    if sdk.exists():
        versions["cloud-sdk"] = sdk.read_text().strip()
    git = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    return {
        "at": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "host": socket.gethostname(),
        "cpus": os.cpu_count(),
        "loadavg": [round(x, 2) for x in os.getloadavg()],
        "git": git.stdout.strip() or None,
        "versions": versions,
    }


@contextlib.contextmanager
def emulators(*kinds: str) -> Iterator[dict[str, RunningEmulator]]:
    """Start the official emulators on free ports; always stop them (by pid group)."""
    with tempfile.TemporaryDirectory(prefix="keyramp-bench-") as state:
        manager = EmulatorManager(state_dir=Path(state))
        try:
            yield manager.up(list(kinds))
        finally:
            manager.down()


def env_for(*running: RunningEmulator) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ENV_FOR_KIND.values()}
    env.update({ENV_FOR_KIND[e.kind]: e.endpoint for e in running})
    env["PYTHONUNBUFFERED"] = "1"
    return env


def parse_args(parser: argparse.ArgumentParser, argv: Sequence[str] | None, *,
               smoke: Mapping[str, Any]) -> argparse.Namespace:
    """``parser.parse_args(argv)``, plus ``--smoke``: the defaults in ``smoke`` (toy sizes, no
    warm-up) replace the parser's, flags given explicitly still win. A smoke default the
    parser does not know is a bench bug, said at once (the smoke test parses every bench)."""
    parser.add_argument("--smoke", action="store_true",
                        help="every code path in seconds at toy sizes (the test suite's run; figures mean nothing)")
    unknown = set(smoke) - {a.dest for a in parser._actions}
    if unknown:
        raise ValueError(f"smoke defaults for no option: {sorted(unknown)}")
    args = list(sys.argv[1:] if argv is None else argv)
    if "--smoke" in args:
        parser.set_defaults(**smoke)
    return parser.parse_args(args)


def save(name: str, payload: Mapping[str, Any]) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}.json"
    path.write_text(json.dumps(payload, indent=1, sort_keys=False) + "\n")
    return path


def table(headers: list[str], rows: list[list[Any]]) -> str:
    cells = [[f"{c:.3g}" if isinstance(c, float) and abs(c) < 1 else (f"{c:,.1f}" if isinstance(c, float) else str(c))
              for c in row] for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) if cells else len(h) for i, h in enumerate(headers)]
    out = ["  ".join(h.rjust(w) for h, w in zip(headers, widths, strict=True))]
    out += ["  ".join(c.rjust(w) for c, w in zip(r, widths, strict=True)) for r in cells]
    return "\n".join(out)


def median(values: list[float]) -> float:
    s = sorted(values)
    n = len(s)
    return (s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2) if n else float("nan")
