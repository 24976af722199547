"""``keyramp calibrate``: measure the model's unpublished parameters on your own project.

``keyramp calibrate suite STORE --project P`` writes two cloud profiles into a directory
and prints their plan; nothing runs and nothing is contacted:

* ``calibrate-<store>-append``: sequential ids on a new key range at 250, 500, 1,000 and
  2,000 writes/s (3 minutes each): one append point, so what it serves is one range's
  capacity;
* ``calibrate-<store>-jump``: random ids, 0 -> 2,000 writes/s at once on a new range for
  10 minutes: the range throttles until it has split, which shows the split trigger,
  delay and fan-out.

They run through ``keyramp run DIR --allow-cloud P`` like any cloud profile (explicit
opt-in, plan, caps, clean-up: docs/cloud.md). ``keyramp calibrate fit RUN... --out FILE``
then fits the parameters to those runs (``_fit``) and writes the file ``[launch] params``
and ``keyramp forecast --params`` load. It costs what the plan says: see docs/cloud.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from keyramp.core import UsageError, parse_duration

if TYPE_CHECKING:
    from keyramp.profile import Profile

__all__ = ["DEFAULT_RATES", "suite_profiles", "write_suite"]

DEFAULT_RATES = (250.0, 500.0, 1000.0, 2000.0)


def suite_profiles(store: str, *, project: str, instance: str = "", database: str = "(default)",
                   rates: Sequence[float] = DEFAULT_RATES, step: str = "3m", jump: float = 2000.0,
                   jump_duration: str = "10m") -> dict[str, tuple[dict[str, Any], dict[str, dict[str, Any]]]]:
    """name -> (top-level fields, tables) of the two calibration profiles for ``store``."""
    if not rates or any(r <= 0 for r in rates):
        raise UsageError("--rates: positive ops/s, e.g. 250,500,1000,2000")
    step_s = parse_duration(step, field="--step")
    jump_s = parse_duration(jump_duration, field="--jump-duration")
    peak = max(max(rates), jump)
    cloud = {"database": database, "max_ops_per_s": round(peak * 1.1), "cleanup": True,
             "max_duration": f"{int((len(rates) * step_s + jump_s) * 1.5 + 300)}s"}
    from keyramp.backends import STORES  # deferred: start-up cost (`keyramp calibrate --help` imports this module)

    spec = STORES.get(store) if store in STORES else None
    if spec is None or spec.cloud is None or spec.tablets is None:
        raise UsageError(f"{store}: no cloud service with a tablet model to calibrate")
    if spec.cloud.needs_instance:
        if not instance:
            raise UsageError(f"--instance: required for {store} (the instance the suite writes tables into)")
        cloud["instance"] = instance
    # Enough users for the peak at ~100 ms per write; no warm-up: the range must be new.
    schedule_common = {"warmup": "0s", "max_users": max(50, int(peak * 0.1) + 10)}
    workload = {"ops": {"insert": 1.0}, "record_count": 0, "key_samples_per_s": 200}
    top = {"target": "cloud", "project": project, "backend": store, "seed": 1}
    return {
        f"calibrate-{store}-append": (
            {"name": f"calibrate-{store}-append", **top, "duration": f"{int(len(rates) * step_s)}s",
             "description": ("keyramp calibrate: sequential ids on a new key range at "
                             + "/".join(f"{r:g}" for r in rates) + " writes/s: one range's capacity")},
            {"workload": workload, "keys": {"strategy": "sequential"},
             "schedule": {"kind": "step", "steps": [float(r) for r in rates], "step": step, **schedule_common},
             "cloud": cloud}),
        f"calibrate-{store}-jump": (
            {"name": f"calibrate-{store}-jump", **top, "duration": jump_duration,
             "description": f"keyramp calibrate: random ids, 0 -> {jump:g} writes/s at once on a new key range: "
                            "how fast it splits"},
            {"workload": workload, "keys": {"strategy": "random"},
             "schedule": {"kind": "constant", "rate": float(jump), **schedule_common}, "cloud": cloud}),
    }


def write_suite(out: Path, store: str, **kwargs: Any) -> dict[Path, Profile]:
    """Write the suite's profiles into ``out`` and validate them as ``keyramp run`` will: each path
    with its loaded profile, in suite order."""
    from keyramp.profile import load_profile, write_profile  # deferred: start-up cost (the profile schema)

    out.mkdir(parents=True, exist_ok=True)
    written: dict[Path, Profile] = {}
    for name, (top, tables) in suite_profiles(store, **kwargs).items():
        path = write_profile(out / f"{name}.toml", top, **tables)
        written[path] = load_profile(path)
    return written
