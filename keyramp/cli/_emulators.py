"""``keyramp emulators up|down|status``: the official local emulators (``keyramp.targets._emulators``)."""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

from keyramp.cli._args import positive_float, positive_int
from keyramp.core import UsageError
from keyramp.targets import (
    EMULATORS,
    EmulatorManager,
    ProxyConfig,
    RunningEmulator,
    forget_shared,
    load_shared,
    shared_proxies,
)

__all__ = ["register"]


def register(subparsers: Any) -> None:
    """Add ``keyramp emulators up|down|status``."""
    parser = subparsers.add_parser("emulators", help="start, stop and list the official local emulators",
                                   description="Manage the official local emulators (Google Cloud SDK).")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--state-dir", type=Path, default=None,
                        help="where emulators.json lives (default $KEYRAMP_STATE_DIR, "
                             "$XDG_STATE_HOME/keyramp or ~/.local/state/keyramp)")
    verbs = parser.add_subparsers(dest="emulators_verb", metavar="up|down|status", required=True)
    kinds_help = f"emulators ({', '.join(EMULATORS)}; default all)"

    up = verbs.add_parser("up", parents=[common],
                          help="start emulators (reuses running ones) and print export lines")
    up.add_argument("kinds", nargs="*", metavar="KIND", help=kinds_help)
    up.add_argument("--consistency", type=float, default=None,
                    help="legacy Datastore emulator consistency in [0, 1] (default 1.0)")
    up.add_argument("--timeout", type=float, default=60.0, help="start-up timeout in seconds (default 60)")
    up.add_argument("--fidelity", choices=("emulator", "store"), default="emulator",
                    help="store: a store proxy in front of each emulator answers what the real store would "
                         "(the store model at 1/--scale; docs/fidelity.md); the variables point at the proxies")
    up.add_argument("--scale", type=positive_float, default=None,
                    help="K: the model's capacities divided by K (default 100)")
    up.add_argument("--time-scale", type=positive_float, default=None,
                    help="T: the model's delays (splits) divided by T (default 1)")
    up.add_argument("--nodes", type=positive_int, default=None,
                    help="Bigtable: the modelled cluster's nodes (default 1)")
    up.add_argument("--exempt", action="append", default=[], metavar="FIELD",
                    help="Firestore: a field exempt from single-field indexes (repeatable)")
    up.set_defaults(func=_cmd_up)

    down = verbs.add_parser("down", parents=[common], help="stop emulators started by `emulators up`")
    down.add_argument("kinds", nargs="*", metavar="KIND", help=kinds_help)
    down.set_defaults(func=_cmd_down)

    status = verbs.add_parser("status", parents=[common], help="list recorded emulators and whether they are alive")
    status.add_argument("--json", action="store_true", help="machine-readable output")
    status.set_defaults(func=_cmd_status)


def _manager(args: argparse.Namespace, **kw: Any) -> EmulatorManager:
    return EmulatorManager(state_dir=args.state_dir, **kw)


def _cmd_up(args: argparse.Namespace) -> int:
    if args.timeout <= 0:
        raise UsageError(f"--timeout must be positive, got {args.timeout}")
    store = args.fidelity == "store"
    if not store and (args.scale, args.time_scale, args.nodes, args.exempt) != (None, None, None, []):
        raise UsageError("--scale, --time-scale, --nodes and --exempt apply only with --fidelity store")
    config = ProxyConfig(scale=100.0 if args.scale is None else args.scale,
                         time_scale=1.0 if args.time_scale is None else args.time_scale,
                         nodes=1 if args.nodes is None else args.nodes, exempt=tuple(args.exempt)) if store else None
    manager = _manager(args, startup_timeout_s=args.timeout)
    running = manager.up(args.kinds or list(EMULATORS), consistency=args.consistency)
    endpoints = {kind: emu.endpoint for kind, emu in running.items()}
    if config is not None:
        proxies = shared_proxies(manager.state_dir, endpoints, config)
        print(f"# {config.describe()}: modelled, not the emulator, not the cloud (docs/fidelity.md)")
        for kind, record in proxies.items():
            print(f"# {kind}: store proxy pid {record.pid} in front of the emulator at {record.upstream} "
                  "(its HTTP calls, e.g. reset, pass through unmodelled)")
        endpoints.update({kind: record.endpoint for kind, record in proxies.items()})
    for kind, endpoint in endpoints.items():
        print(f"export {EMULATORS[kind].env_var}={endpoint}")
    return 0


def _cmd_down(args: argparse.Namespace) -> int:
    forget_shared(_manager(args).state_dir, args.kinds or None)  # the proxies in front of them first
    stopped = _manager(args).down(args.kinds or None)
    print(f"stopped: {', '.join(stopped)}" if stopped else "no emulators were running")
    return 0


def _used_by(emu: RunningEmulator) -> str:
    """Who holds the emulator: a run's own, or the shared one and the runs leasing it."""
    if emu.owner is not None:
        return f"run pid {emu.owner[0]}" + (" (gone)" if emu.orphaned() else "")
    runs = [str(pid) for pid in emu.lease_pids()]
    return "shared" + (f", run pid {', '.join(runs)}" if runs else "")


def _cmd_status(args: argparse.Namespace) -> int:
    rows = [(emu, emu.alive()) for emu in _manager(args).status()]
    if args.json:
        print(json.dumps([{**asdict(emu), "endpoint": emu.endpoint, "alive": alive} for emu, alive in rows],
                         indent=2))
        return 0
    table = [("KIND", "ENDPOINT", "PID", "ALIVE", "USED BY", "LOG")]
    table += [(e.kind, e.endpoint, str(e.pid), "yes" if a else "no", _used_by(e), e.log_path) for e, a in rows]
    widths = [max(len(r[i]) for r in table) for i in range(5)]
    for row in table:
        print("  ".join(cell.ljust(w) for cell, w in zip(row[:5], widths, strict=True)) + "  " + row[5])
    if not rows:
        print("(no emulators recorded)")
    for kind, record in load_shared(_manager(args).state_dir).items():
        print(f"store proxy  {kind}  {record.endpoint}  pid {record.pid}  alive {'yes' if record.alive() else 'no'}  "
              f"in front of {record.upstream}  {ProxyConfig.from_json(record.config).describe()}")
    return 0
