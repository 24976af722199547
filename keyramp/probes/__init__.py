"""Scenario probes: direct measurements of one best-practice effect, run instead of the load.

A profile selects a probe with ``[workload] probe = "contention"`` plus ``probe_params``;
``run_probe`` runs it against the cell's store and returns the dict that belongs in the
cell summary under ``probe``. A probe needs nothing but a store, so the registry sits just
above the backends: the profile check (``probe_params``) and the runner (``run_probe``) use
it without importing the scenario report (``keyramp.scenarios``), which reads their runs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from keyramp.backends import Backend, Target, spec_for
from keyramp.core import UsageError
from keyramp.probes import _consistency, _contention, _hygiene, _queries, _writes
from keyramp.probes._base import ProbeContext


@dataclass(frozen=True)
class ProbeSpec:
    run: Callable[[ProbeContext], dict[str, Any]]
    defaults: Mapping[str, Any]
    #: Store features the probe needs (``keyramp.backends.FEATURES``): a store that lacks one
    #: reports why (its spec says) instead of running the probe.
    needs: tuple[str, ...] = ()
    #: String parameters limited to a few values.
    choices: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


_QUERIES = ("property_queries",)

PROBES: dict[str, ProbeSpec] = {
    "consistency": ProbeSpec(_consistency.consistency_probe, _consistency.DEFAULTS, _QUERIES),
    "contention": ProbeSpec(_contention.contention_probe, _contention.DEFAULTS, (), _contention.CHOICES),
    "offset_cursor": ProbeSpec(_queries.offset_cursor_probe, _queries.OFFSET_DEFAULTS, _QUERIES),
    "projection": ProbeSpec(_queries.projection_probe, _queries.PROJECTION_DEFAULTS, _QUERIES),
    "deleted_range": ProbeSpec(_queries.deleted_range_probe, _queries.DELETED_DEFAULTS, _QUERIES),
    "batch": ProbeSpec(_writes.batch_probe, _writes.BATCH_DEFAULTS),
    "fanout": ProbeSpec(_writes.fanout_probe, _writes.FANOUT_DEFAULTS, ("secondary_indexes",)),
    "hygiene": ProbeSpec(_hygiene.hygiene_probe, _hygiene.DEFAULTS),
}


def probe_params(name: str, raw: Mapping[str, Any]) -> dict[str, Any]:
    """Defaults filled in; unknown names and wrong types are a ``UsageError``."""
    spec = PROBES[name]
    unknown = sorted(set(raw) - set(spec.defaults))
    if unknown:
        allowed = ", ".join(sorted(spec.defaults)) or "none"
        raise UsageError(f"{name}: unknown parameter '{unknown[0]}' (allowed: {allowed})")
    out = dict(spec.defaults)
    for key, value in raw.items():
        default = spec.defaults[key]
        ok = (isinstance(value, bool) if isinstance(default, bool)
              else isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0
              if isinstance(default, (int, float)) else isinstance(value, type(default)))
        if not ok:
            raise UsageError(f"{name}.{key}: expected {type(default).__name__} (positive), got {value!r}")
        if key in spec.choices and value not in spec.choices[key]:
            raise UsageError(f"{name}.{key}: one of {', '.join(spec.choices[key])}, got {value!r}")
        out[key] = int(value) if isinstance(default, int) and not isinstance(default, bool) else value
    return out


def run_probe(name: str, *, backend_class: type[Backend], target: Target, params: Mapping[str, Any] | None = None,
              budget_s: float = 30.0, seed: int = 1, consistency: float = 1.0) -> dict[str, Any]:
    """Run probe ``name`` on a prepared store; returns ``{"name", "backend", "result" | "unsupported"}``."""
    spec = PROBES[name]
    out: dict[str, Any] = {"name": name, "backend": target.backend}
    store = spec_for(target.backend)
    missing = [feature for feature in spec.needs if not store.has(feature)]
    if missing:
        out["unsupported"] = store.why_not(missing[0])
        return out
    ctx = ProbeContext(backend_class=backend_class, target=target, params=probe_params(name, params or {}),
                       budget_s=budget_s, seed=seed, consistency=consistency)
    try:
        out["params"] = dict(ctx.params)
        out["result"] = spec.run(ctx)
    finally:
        ctx.close()
    return out


if not TYPE_CHECKING:
    from keyramp.core import lazy_exports

    __getattr__, __dir__ = lazy_exports(globals())
