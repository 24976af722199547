"""``keyramp emulators up|down|status``: the official local emulators (``keyramp.targets._emulators``)."""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

from keyramp._errors import UsageError
from keyramp.targets._emulators import EMULATORS, EmulatorManager, RunningEmulator

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
    running = _manager(args, startup_timeout_s=args.timeout).up(
        args.kinds or list(EMULATORS), consistency=args.consistency)
    for kind, emu in running.items():
        print(f"export {EMULATORS[kind].env_var}={emu.endpoint}")
    return 0


def _cmd_down(args: argparse.Namespace) -> int:
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
    return 0
