"""One verdict per best-practice rule from its evidence rows (``verdict``), and the rules that
share their evidence (``own_verdicts``): a sentence per store or pair that says what was
measured or modelled and whether it confirms the rule.

An effect the emulator cannot show is "not observable on the emulator", never "no
difference"; modelled figures are labelled as modelled.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from keyramp.core import fmt
from keyramp.forecast import VERDICT_RANK
from keyramp.results import LIMIT_WORDS
from keyramp.scenarios._evidence import Evidence

__all__ = ["RuleVerdict", "own_verdicts", "verdict"]

#: Below this share of the spread variant's commit rate, a hot key "commits far less".
_STARVED = 0.5
#: Fewer consistency attempts than this cannot confirm "stale ≈ 1 − consistency".
_MIN_ATTEMPTS = 20


def _contention_parts(rows: list[Evidence]) -> list[tuple[str, str]]:
    out = []
    for backend in sorted({r.backend for r in rows}):
        mine = [r for r in rows if r.backend == backend]
        hot = [r for r in mine if r.values.get("hot")]
        spread = [r for r in mine if not r.values.get("hot")]
        if not (hot and spread):
            r = mine[0]
            out.append(("measured", f"measured on {backend}: {r.values['aborted']} aborted, "
                                    f"{r.values['committed_per_s']} committed/s (no pair to compare)"))
            continue
        hot_ab, spread_ab = max(r.values["aborted"] for r in hot), max(r.values["aborted"] for r in spread)
        hot_rate = min(r.values["committed_per_s"] or 0.0 for r in hot)
        spread_rate = max(r.values["committed_per_s"] or 0.0 for r in spread)
        facts = (f"the hot key/group aborted {hot_ab} transactions and committed {hot_rate}/s, the spread "
                 f"variant {spread_ab} and {spread_rate}/s")
        if hot_ab > spread_ab or (spread_rate > 0 and hot_rate < _STARVED * spread_rate):
            out.append(("confirmed (measured)", f"confirmed (measured) on {backend}: {facts}"))
        else:
            out.append(("not observable on the emulator",
                        f"not observable on the emulator for {backend} (it serialises the writes): {facts}"))
    return out


def _consistency_parts(rows: list[Evidence]) -> list[tuple[str, str]]:
    out = []
    for r in rows:
        v = r.values
        stale, expected = v.get("stale_rate"), v.get("expected") or 0.0
        strong = f"ancestor queries {fmt.percent(v.get('ancestor'))}, lookups {fmt.percent(v.get('lookup'))}"
        if expected > 0 and stale:
            n = int(v.get("attempts") or 0)
            # Binomial: 3 standard deviations of the stale rate around 1 − consistency.
            tolerance = max(0.1, 3 * math.sqrt(expected * (1 - expected) / max(n, 1)))
            close = (n >= _MIN_ATTEMPTS and abs(stale - expected) <= tolerance
                     and not v.get("ancestor") and not v.get("lookup"))
            label = "confirmed (measured)" if close else "measured"
            few = f" (only {fmt.plural(n, 'attempt')}: too few to judge)" if n < _MIN_ATTEMPTS else ""
            out.append((label, f"{label} ({r.profile}): global queries missed a just-written entity in "
                               f"{fmt.percent(stale)} of {fmt.plural(n, 'attempt')} (≈ 1 − consistency = "
                               f"{fmt.percent(expected)}){few}; {strong}"))
        elif expected > 0:
            out.append(("not observable on the emulator",
                        f"not observable on the emulator ({r.profile}): no stale global query although the "
                        f"profile asks for consistency {1 - expected:g}; the emulator ran strongly consistent "
                        "(an attached or reused emulator keeps its own --consistency)"))
        else:
            out.append(("measured", f"reference ({r.profile}, consistency 1.0): global queries stale "
                                    f"{fmt.percent(stale)}; {strong}"))
    return out


_RATIO_WHAT = {
    "offset_cursor": "offset slower than cursor",
    "projection": "full entities slower than keys-only",
    "deleted_range": "head of a deleted range slower than a stored start",
    "batch": "batching faster than single operations",
    "fanout": "indexed writes slower than unindexed",
}


def _ratio_parts(rows: list[Evidence]) -> list[tuple[str, str]]:
    out = []
    for r in rows:
        what = _RATIO_WHAT.get(r.probe or "", "effect")
        ratio = r.values.get("ratio")
        if r.probe == "batch":
            what = "batching faster than single operations: writes"
            ratio = f"{r.values.get('writes')}, reads ×{r.values.get('reads')}"
        if r.kind == "measured":
            out.append(("confirmed (measured)", f"confirmed (measured) on {r.backend}: {what} ×{ratio}"))
        else:
            out.append(("not observable on the emulator",
                        f"not observable on the emulator for {r.backend}: {what} only ×{ratio}, within noise"))
    return out



def _design(rows: list[Evidence], role: str) -> str:
    """``sequential ids (append ×1)``: the role's key designs with their measured pattern."""
    seen: dict[str, str] = {}
    for r in rows:
        if r.role == role:
            seen.setdefault(str(r.values.get("strategy") or r.profile), str(r.values.get("headline") or "-"))
    return ", ".join(f"{s} ({h})" if h != "-" else s for s, h in seen.items()) or role


def _at_launch(rows: list[Evidence], role: str) -> tuple[str, int | None]:
    """``hotspot 42%–68% on datastore, firestore; ok 0% on bigtable``, and the worst verdict's rank."""
    by_verdict: dict[str, list[str]] = {}
    for r in rows:
        if r.role == role and r.values.get("forecast"):
            by_verdict.setdefault(str(r.values["forecast"]), []).append(r.backend or r.profile)
    if not by_verdict:
        return "", None
    worst = max(VERDICT_RANK.get(str(r.values.get("forecast_verdict")), 1) for r in rows
                if r.role == role and r.values.get("forecast"))
    if len(by_verdict) == 1:
        return next(iter(by_verdict)), worst
    return "; ".join(f"{v} on {', '.join(dict.fromkeys(b))}" for v, b in by_verdict.items()), worst


def _keyspace_parts(rows: list[Evidence]) -> list[tuple[str, str]]:
    """One breath: which design, what it does at the launch (the forecast), the fix; figures in the rows."""
    base = "not observable on the emulator (single node, no tablet splits): modelled from the key stream"
    anti, best = _design(rows, "anti-pattern"), _design(rows, "best practice")
    has = {role: any(r.role == role for r in rows) for role in ("anti-pattern", "best practice")}
    if not (has["anti-pattern"] and has["best practice"]):
        shapes = "; ".join(dict.fromkeys(f"{r.values.get('strategy') or r.profile}: {r.values.get('headline')}"
                                         for r in rows))
        return [("modelled", f"{shapes} ({base})")]
    anti_fc, anti_rank = _at_launch(rows, "anti-pattern")
    best_fc, best_rank = _at_launch(rows, "best practice")
    launch = next((str(r.values["launch"]) for r in rows if r.values.get("launch")), "")
    if anti_rank is not None and best_rank is not None:
        sentence = f"{anti}: {anti_fc} at the launch ({launch}); fix: {best}: {best_fc}"
        confirmed = anti_rank > best_rank
    else:  # no [launch]: the measured patterns only (a hot or appending anti-pattern against a spread fix)
        sentence = f"{anti} vs {best}; no launch forecast (the profile has no [launch])"
        patterns = {role: {str(r.values.get("headline")) for r in rows if r.role == role}
                    for role in ("anti-pattern", "best practice")}
        confirmed = patterns["best practice"] == {"spread"} and "spread" not in patterns["anti-pattern"]
    if confirmed:
        return [("confirmed (modelled)", f"confirmed (modelled): {sentence}. {base}")]
    return [("modelled", f"not confirmed by the model (both designs fare alike at the launch): {sentence}. {base}")]


def _hygiene_parts(rows: list[Evidence]) -> list[tuple[str, str]]:
    return [("measured", f"measured on {r.backend}: {r.values.get('rejected')} of {r.values.get('cases')} "
                         "cases rejected, each with the store's own error") for r in rows]


def _limited_parts(rows: list[Evidence]) -> list[tuple[str, str]]:
    return [(f"inconclusive ({r.kind})", f"inconclusive ({r.label}): {r.text}") for r in rows]


def _plain_parts(rows: list[Evidence]) -> list[tuple[str, str]]:
    return [("measured", f"measured ({r.label}): {r.text}") for r in rows]


#: What a verdict alone would leave misleading: where the pair cannot differ on the emulator or the model.
_NOTES: dict[str, str] = {
    "BP-KEY-2": "the legacy Datastore emulator allocates ids sequentially (201, 202, …), unlike the scattered "
                "ids of the real service, so on the emulator both variants append at the end of the key range",
    "BP-KEY-6": "the rule is about scan order (newest rows first); both variants are monotonic, so the load "
                "model sees the same moving hotspot for both",
    "BP-RATE-2": "the hotspot metrics see document keys, not the index entries of the monotonic field; the "
                 "launch forecast projects the index range too (500 writes/s at its append point, published)",
    "BP-API-3": "async calls are not measured separately: batching shows the same saved round trips",
}


_PRIORITY = ("confirmed (measured)", "confirmed (modelled)", "measured", "modelled",
             *(f"inconclusive ({word})" for word in LIMIT_WORDS), "not observable on the emulator", "unsupported",
             "no usable evidence")


def verdict(rows: Sequence[Evidence]) -> tuple[str, str]:
    """``(status, sentence)`` for one rule from its evidence rows."""
    rows = list(rows)
    parts: list[tuple[str, str]] = []
    usable = [r for r in rows if r.kind not in ("unsupported", "not applicable")]
    groups = (
        ([r for r in usable if r.probe == "contention"], _contention_parts),
        ([r for r in usable if r.probe == "consistency"], _consistency_parts),
        ([r for r in usable if r.probe in _RATIO_WHAT], _ratio_parts),
        ([r for r in usable if r.probe == "hygiene"], _hygiene_parts),
        ([r for r in usable if r.probe is None and r.kind == "modelled"], _keyspace_parts),
        ([r for r in usable if r.kind in LIMIT_WORDS], _limited_parts),
        ([r for r in usable if r.probe is None and r.kind != "modelled" and r.kind not in LIMIT_WORDS], _plain_parts),
    )
    for group, describe in groups:
        if group:
            parts += describe(group)
    for r in rows:
        if r.kind == "unsupported":
            parts.append(("unsupported", f"unsupported on {r.backend}: {r.text}"))
        elif r.kind == "not applicable":
            parts.append(("no usable evidence", f"no evidence from {r.profile}: {r.text}"))
    if not parts:
        return "no usable evidence", "no usable evidence"
    if rows and rows[0].rule in _NOTES:
        parts.append(("", f"note: {_NOTES[rows[0].rule]}"))
    status = min((p[0] for p in parts if p[0]), key=_PRIORITY.index)
    if status.startswith("confirmed") and any(p[0] == "not observable on the emulator" for p in parts):
        status += "; not observable on some stores"
    return status, "; ".join(dict.fromkeys(p[1] for p in parts))



#: What a rule asks beyond the rule whose runs it shares (profiles that cite both), said instead of
#: repeating that rule's verdict as its own.
_BEYOND: dict[str, str] = {
    "BP-RAMP-2": "they show the ramp both rules ask for; what BP-RAMP-2 adds, moving users to the new kind "
                 "in the order of a deterministic hash of their ids while reads fall back to the old kind, is not "
                 "exercised: these runs ramp one new kind",
}


@dataclass(frozen=True, kw_only=True)
class RuleVerdict:
    status: str
    text: str
    #: The earlier rule whose runs are this rule's whole evidence (its charts are drawn there).
    shared_with: str | None = None


def own_verdicts(groups: Mapping[str, Sequence[Evidence]]) -> dict[str, RuleVerdict]:
    """Each rule's verdict, in ``groups`` order. A rule whose evidence is exactly the cells of an
    earlier rule (a profile citing both, as the BP-RAMP pair does) would repeat that rule's
    sentence word for word as its own; it says instead which rule's runs it shares, their verdict
    there, and what it asks that they do not test."""
    out: dict[str, RuleVerdict] = {}
    owner: dict[frozenset[tuple[object, str, str]], str] = {}
    for rule, rows in groups.items():
        cells = frozenset((r.run, r.profile, r.cell) for r in rows if r.kind != "not applicable")
        first = owner.setdefault(cells, rule) if cells else rule
        if first == rule:
            status, text = verdict(rows)
            out[rule] = RuleVerdict(status=status, text=text)
            continue
        beyond = _BEYOND.get(rule, f"nothing in them tells {rule} apart from {first}")
        out[rule] = RuleVerdict(
            status=f"partly tested: the runs of {first}", shared_with=first,
            text=f"the same runs as {first} ({out[first].status} there: see {first}); {beyond}")
    return out
