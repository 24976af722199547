"""``keyramp plan RUN``: the safe ramp within the evidence, the shards or nodes a key design needs, and the cost
(docs/plan.md). Parses, calls ``keyramp.forecast``'s planner, prints."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from keyramp.cli._args import positive_float
from keyramp.core import UsageError, fmt
from keyramp.forecast import load_prices
from keyramp.profile import Settings
from keyramp.results import resolve_run

__all__ = ["register"]


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "plan",
        help="plan a launch from a finished run: sustainable rate, safe ramp, shards/nodes, cost (modelled)",
        description=(
            "For every cell of RUN: what the key design sustains once the store has split, whether the target is "
            "reachable with the throttled share under --throttle across the model's parameter band, the fastest "
            "safe ramp of the 500/50/5 family (or the fix: shards, Bigtable nodes, a key design), and the cost at "
            "list prices. Every figure is modelled (docs/plan.md)."
        ),
    )
    p.add_argument("run", metavar="RUN", help="run directory (or run id under --results)")
    p.add_argument("--target", type=float, default=None, metavar="OPS",
                   help="launch rate in ops/s (default: the peak of the run's [launch])")
    p.add_argument("--cell", default=None, help="only this cell id")
    p.add_argument("--throttle", type=float, default=0.01,
                   help="the largest throttled share a plan accepts (default 0.01 = 1 %%)")
    p.add_argument("--nodes", type=int, default=None, help="Bigtable nodes to plan on (default: [launch] nodes, 1)")
    p.add_argument("--storage", choices=("ssd", "hdd"), default=None, help="Bigtable storage type")
    p.add_argument("--params", metavar="FILE", default=None, help="parameter ranges from `keyramp calibrate fit`")
    p.add_argument("--prices", metavar="FILE", type=Path, default=None,
                   help="prices laid over keyramp's list-price table (docs/plan.md#your-prices---prices-file)")
    p.add_argument("--location", default=None, help="price at this location (default: each store's in the table)")
    p.add_argument("--write-profile", metavar="FILE", type=Path, default=None,
                   help="write a cloud profile rehearsing one cell's planned ramp (needs --cell on a run of "
                        "several cells)")
    p.add_argument("--fidelity", choices=("cloud", "store"), default="cloud",
                   help="with --write-profile: `cloud` (default) rehearses on the real service at the launch's rates; "
                        "`store` writes the same ramp at 1/--scale, clock x--time-scale, against the store-like "
                        "target (docs/fidelity.md)")
    p.add_argument("--project", default=None, help="with --write-profile: the cloud project (default: a placeholder)")
    p.add_argument("--instance", default=None,
                   help="with --write-profile: the Bigtable instance (default: a placeholder)")
    p.add_argument("--verify", action="store_true",
                   help="replay one cell's plan (the planned ramp, 500/50/5, the fix) at 1/K against the store-like "
                        "target and print the measured throttled share beside the modelled one (docs/fidelity.md)")
    p.add_argument("--scale", type=positive_float, default=None,
                   help="with --verify or --fidelity store: K (default: the target / 200 ops/s)")
    p.add_argument("--time-scale", type=positive_float, default=None,
                   help="with --verify or --fidelity store: T, the replay's clock (default: 1,000 / K)")
    p.add_argument("--json", action="store_true", help="print JSON (the plan of every cell)")
    p.add_argument("--results", type=Path, default=Path("results"), help="where run ids are looked up")
    p.set_defaults(func=_main)


def _main(args: argparse.Namespace) -> int:
    # deferred: start-up cost (the planner, numpy, pyarrow: `keyramp --help` imports every verb's module)
    from keyramp.forecast import (
        plan_run,  # deferred: start-up cost
        plan_text,  # deferred: start-up cost
    )

    if args.nodes is not None and args.nodes < 1:
        raise UsageError(f"--nodes: must be at least 1, got {args.nodes}")
    store = args.fidelity == "store"
    if store and args.write_profile is None:
        raise UsageError("--fidelity applies with --write-profile only")
    if (args.project or args.instance) and (args.write_profile is None or store):
        raise UsageError("--project/--instance apply with --write-profile of a cloud rehearsal only")
    if (args.scale is not None or args.time_scale is not None) and not (args.verify or store):
        raise UsageError("--scale/--time-scale apply with --verify or --write-profile FILE --fidelity store only")
    prices = load_prices(args.prices)  # a bad prices file stops here, before anything is planned
    run = resolve_run(args.run, args.results)
    manifest = run.manifest
    if manifest is None:
        raise UsageError(f"{run.path}: {run.manifest_error or 'no readable manifest.json'}")
    for flag, given in (("--write-profile", args.write_profile is not None), ("--verify", args.verify)):
        if given and args.cell is None and len(manifest.cells) != 1:
            raise UsageError(f"{flag}: the run has {len(manifest.cells)} cells; name one with --cell")
    plan = plan_run(run, target=args.target, cell=args.cell, throttle=args.throttle, nodes=args.nodes,
                    storage=args.storage, params=Path(args.params) if args.params else None, prices=prices,
                    location=args.location)
    if not plan.cells:
        raise UsageError(f"{run.path}: no cell with a key stream to plan")
    if args.write_profile is not None:
        if manifest.settings is None:
            raise UsageError(f"--write-profile: {run.path}: the manifest keeps no readable profile to rehearse")
        rehearsal = _write(args, plan.planned[0], manifest.settings)
    if args.json:
        json.dump(plan.to_json(), sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        print(plan_text(plan))
    if args.write_profile is not None:
        from keyramp.profile import lint_profile  # deferred: start-up cost (the lint rules: --write-profile only)

        findings = lint_profile(rehearsal)
        acknowledged = sorted({f.rule for f in findings if f.severity == "acknowledged"})
        if acknowledged:  # Google's general figures against what the model found safe
            print(f"note: its [acknowledge] names {', '.join(acknowledged)} with the plan's evidence (modelled): "
                  "keyramp lint reports them as acknowledged, and the rehearsal measures them", file=sys.stderr)
        for finding in findings:
            if finding.severity == "error":
                print(f"note: keyramp lint flags {finding.rule} ({finding.message}); the plan did not model it",
                      file=sys.stderr)
        _wrote(args, rehearsal)
    if args.verify:
        if manifest.settings is None:
            raise UsageError(f"--verify: {run.path}: the manifest keeps no readable profile to replay")
        return verify(plan.planned[0], manifest.settings, scale=args.scale, time_scale=args.time_scale,
                      out=args.results)
    return 0


def _write(args: argparse.Namespace, plan: Any, settings: Settings) -> Any:
    """The rehearsal ``--write-profile`` writes: on the cloud, or (``--fidelity store``) at 1/K on the
    store-like target."""
    from keyramp.forecast import (  # deferred: start-up cost
        verify_scale,
        write_rehearsal,  # deferred: start-up cost
        write_store_rehearsal,
    )

    if args.fidelity == "store":
        k, t = verify_scale(plan, scale=args.scale, time_scale=args.time_scale)
        return write_store_rehearsal(args.write_profile, plan, settings, scale=k, time_scale=t)
    return write_rehearsal(args.write_profile, plan, settings, project=args.project, instance=args.instance)


def _wrote(args: argparse.Namespace, rehearsal: Any) -> None:
    from keyramp.forecast import (
        CHECKS_WHAT,  # deferred: start-up cost
        PLACEHOLDER_PROJECT,  # deferred: start-up cost
    )

    path = args.write_profile
    if args.fidelity == "store":
        model = rehearsal.emulator
        print(f"wrote {path}: the rehearsal at 1/{model.scale:g}, clock x{model.time_scale:g}, against the store-like "
              f"target: run it with `keyramp run {path}`", file=sys.stderr)
        print(f"note: {CHECKS_WHAT}", file=sys.stderr)
        return
    note = "" if args.project else f" (edit project = {PLACEHOLDER_PROJECT!r} first)"
    print(f"wrote {path}: run it with `keyramp run {path} --allow-cloud PROJECT --plan`{note}; rehearse it at "
          "1/K on the store-like target first with --fidelity store", file=sys.stderr)


def verify(plan: Any, settings: Settings, *, scale: float | None, time_scale: float | None, out: Path) -> int:
    """``--verify``: run each replay of ``plan`` and print measured beside modelled."""
    from keyramp.forecast import CHECKS_WHAT, verify_scale, verify_variants  # deferred: start-up cost
    from keyramp.run import run_profiles  # deferred: start-up cost (locust, grpc)

    k, t = verify_scale(plan, scale=scale, time_scale=time_scale)
    variants = verify_variants(plan, settings, scale=k, time_scale=t)
    outcome = run_profiles([v.profile for v in variants], out=out, quiet=True)
    print(f"verify {plan.cell_id} ({plan.backend}) at 1/{k:g} of {plan.target_ops_per_s:,.0f} ops/s, clock x{t:g}:")
    failed = 0
    for variant, run in zip(variants, outcome.runs, strict=False):  # an interrupt stops the sequence
        cell = next(iter(run.summary.cells.values()), None) if run.summary is not None else None
        model = cell.store_model if cell is not None else None
        thr = variant.modelled.throttled_fraction if variant.modelled is not None else None
        modelled = fmt.percent_band(thr["low"], thr["high"]) if thr else "not forecast by the plan"
        if model is None or model.throttled_share is None:
            measured, failed = f"no measurement ({run.status}: {run.reason})", failed + 1
        else:
            measured = f"{fmt.percent(model.throttled_share)} of {model.modelled or 0:,} requests"
        print(f"  {variant.name} ({variant.design}): modelled throttled {modelled} · measured {measured} "
              f"({run.run_id})")
    print(f"note: {CHECKS_WHAT}")
    return 1 if failed else 0
