"""BP-CONS-1/2: how often a just-written entity is missing from a global query vs an
ancestor query vs a lookup, and how many global queries it takes to appear.

The legacy Datastore emulator (``--consistency=c``) applies a write to a global query's
view with probability c *per query*, and a lookup applies it for good: so every kind of
read gets its own entity, and the global query runs before anything else touches it.
"""

from __future__ import annotations

import statistics
from typing import Any

from keyramp.backends import QuerySpec
from keyramp.probes._base import ProbeContext

__all__ = ["DEFAULTS", "consistency_probe"]

DEFAULTS: dict[str, Any] = {"attempts": 200, "max_requery": 50}


def consistency_probe(ctx: ProbeContext) -> dict[str, Any]:
    # Counts, not latency: a generous deadline, so a cold (just started) emulator's
    # first slow calls are not a failed run.
    backend = ctx.backend(timeout_s=max(ctx.target.timeout_s, 30.0))
    ancestors = ctx.store.has("ancestor_queries")
    attempts = int(ctx.params["attempts"])
    cap = int(ctx.params["max_requery"])
    done = stale = anc_stale = lookup_stale = 0
    until_visible: list[int] = []
    never = 0
    # One unrecorded round first: a just-started JVM emulator answers its first calls
    # slowly (seconds), and those are not what this probe measures.
    warm = (f"w-{ctx.seed}", 1)
    backend.insert(warm, {"marker": "warm", "n": -1})
    backend.query(QuerySpec(field="marker", op="==", value="warm", limit=1))
    backend.read(warm)
    for i in range(attempts):
        if ctx.remaining_s() < 1.0:
            break
        tag = f"c{ctx.seed}-{i}"
        g_key, a_key, l_key = (f"g-{tag}", 1), (f"a-{tag}", 1), (f"l-{tag}", 1)
        for key in (g_key, a_key, l_key):
            backend.insert(key, {"marker": f"{key[0]}", "n": i})
        spec = QuerySpec(field="marker", op="==", value=g_key[0], limit=1)
        queries = 1
        found = backend.query(spec) > 0
        if not found:
            stale += 1
            while not found and queries < cap:
                queries += 1
                found = backend.query(spec) > 0
            if not found:
                never += 1
        until_visible.append(queries)
        if ancestors:
            anc = QuerySpec(field="marker", op="==", value=a_key[0], limit=1, ancestor=a_key)
            anc_stale += backend.query(anc) == 0
        lookup_stale += not backend.read(l_key)
        done += 1

    def rate(n: int) -> float | None:
        return round(n / done, 4) if done else None

    return {
        "attempts": done,
        "emulator_consistency": ctx.consistency,
        "expected_stale_rate": round(1.0 - ctx.consistency, 4),
        "global_stale": stale,
        "global_stale_rate": rate(stale),
        "ancestor_stale_rate": rate(anc_stale) if ancestors else None,
        "lookup_stale_rate": rate(lookup_stale),
        "queries_until_visible": {
            "mean": round(statistics.fmean(until_visible), 3) if until_visible else None,
            "max": max(until_visible, default=None),
            "never_within_cap": never,
        },
    }
