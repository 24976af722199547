"""Is the store model scale-invariant at the K and T a store-like run uses? (docs/fidelity.md,
"Choosing K and T"). The model alone (``keyramp.storemodel``, no proxy, no emulator) is driven with
the launch's 500/50/5 ramp to ``--ceiling`` at 1/K of its rates and K of its capacities, its clock
×T, Poisson arrivals, sequential and random ids; it prints the throttled share of each (modelled).

Run: ``.venv/bin/python bench/bench_fidelity_scale.py [--cases firestore:100:30 bigtable:100:10]``;
writes ``bench/results/fidelity_scale.json``.
"""

from __future__ import annotations

import argparse
import random
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import machine, parse_args, save, table

from keyramp.backends import spec_for
from keyramp.storemodel import Access, StoreModel, StoreOp


def throttled_share(store: str, *, scale: float, time_scale: float, sequential: bool, ceiling: float,
                    steps: int, nodes: int, seed: int = 1) -> tuple[int, float]:
    """(operations offered, throttled share) of one design under 500/50/5 to ``ceiling``, ``steps`` steps."""
    model = StoreModel.for_store(spec_for(store), scale=scale, time_scale=time_scale, nodes=nodes)
    rng = random.Random(seed)
    space = "rows" if spec_for(store).tablets.box().kind == "nodes" else "documents"  # type: ignore[union-attr]
    step_s, now, offered, throttled = 300.0 / time_scale, 0.0, 0, 0
    while now < step_s * steps:
        now += rng.expovariate(min(500.0 * 1.5 ** int(now / step_s), ceiling) / scale)
        offered += 1
        key = (f"{offered:012d}" if sequential else f"{rng.getrandbits(64):016x}").encode()
        throttled += not model.offer(StoreOp((Access(space, key, True),), (key,), "write"), now).admitted
    return offered, throttled / offered


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--cases", nargs="+", default=["firestore:10:10", "firestore:100:1", "firestore:100:10",
                                                       "firestore:20:50", "firestore:100:30", "bigtable:100:10",
                                                       "bigtable:100:30"], help="STORE:K:T")
    parser.add_argument("--ceiling", type=float, default=20000.0)
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--nodes", type=int, default=3)
    args = parse_args(parser, argv, smoke={"cases": ["firestore:100:30"], "steps": 3})
    rows: list[dict[str, Any]] = []
    for case in args.cases:
        store, k, t = case.split(":")
        row: dict[str, Any] = {"store": store, "scale": float(k), "time_scale": float(t)}
        for design in ("sequential", "random"):
            ops, share = throttled_share(store, scale=float(k), time_scale=float(t), sequential=design == "sequential",
                                         ceiling=args.ceiling, steps=args.steps, nodes=args.nodes)
            row[design] = round(share, 4)
            row[f"{design}_ops"] = ops
        rows.append(row)
        print(f"{store:10} K {k:>4} T {t:>3} sequential {row['sequential']:.1%} random {row['random']:.1%}", flush=True)
    print(table(["store", "K", "T", "sequential", "random"],
                [[r["store"], r["scale"], r["time_scale"], r["sequential"], r["random"]] for r in rows]))
    path = save("fidelity_scale", {"bench": "fidelity_scale", "args": vars(args), "machine": machine(), "rows": rows})
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
