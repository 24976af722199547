"""The answer a run page opens with: one row per cell — key pattern, forecast, plan, cost, thresholds, errors.

Built from the run's view model (``_model.run_detail``) and its plans (``_plans``); the same
rows go into the JSON twin. The key pattern is measured (the sampled key stream's headline,
``keyspace._headline``); the forecast, plan and cost are modelled, and labelled so.
"""

from __future__ import annotations

from typing import Any

from keyramp.core import fmt
from keyramp.keyspace import keyspace_headline
from keyramp.web._plan import plan_view
from keyramp.web._plans import RunPlans

__all__ = ["answer_row", "with_plans"]


def _thresholds(cell: dict[str, Any]) -> dict[str, Any]:
    rows = cell.get("thresholds") or []
    failed = [t["name"] or "?" for t in rows if t.get("verdict") == "fail"]
    open_ = [t["name"] or "?" for t in rows if t.get("verdict") == "inconclusive"]
    verdict = "fail" if failed else "inconclusive" if open_ else "pass" if rows else None
    if not rows:
        text = fmt.MISSING
    elif failed:
        text = f"{len(failed)} of {len(rows)} failed: {', '.join(failed)}"
    elif open_:
        text = f"{len(open_)} of {len(rows)} inconclusive: {', '.join(open_)}"
    else:
        text = f"{len(rows)} passed"
    return {"verdict": verdict, "text": text, "failed": failed}


def _errors(cell: dict[str, Any]) -> dict[str, Any]:
    total = cell.get("total") or {}
    errors, rate = total.get("errors"), total.get("error_rate")
    workload = bool(cell.get("exceptions")) or bool(cell.get("workload_failed"))
    if errors is None:
        text = fmt.MISSING
    elif not errors:
        text = "none"
    else:
        text = f"{fmt.count(errors)} ({fmt.percent(rate)})"
    return {"count": errors, "rate": rate, "text": text + (" · workload errors" if workload else ""),
            "bad": bool(errors) or workload}


def answer_row(cell: dict[str, Any], plans: RunPlans) -> dict[str, Any]:
    """One cell's answer; ``plan``: the plan section's view model (None: no plan, see ``plans.hint``)."""
    fc = cell.get("forecast") or {}
    plan = cell.get("plan")
    pending = cell["id"] in plans.pending
    return {
        "id": cell["id"], "backend": cell.get("backend"), "strategy": cell.get("strategy"),
        "pattern": keyspace_headline(cell.get("keyspace_fields")),
        "forecast": fc.get("short") or fmt.MISSING, "verdict_class": fc.get("verdict_class") or "none",
        "plan": plan["short"] if plan else ("not planned on view" if pending
                                            else "being planned…" if plans.status == "planning" else fmt.MISSING),
        "reachable": plan["reachable"] if plan else None,
        "cost": plan["cost"]["short"] if plan and plan.get("cost") else fmt.MISSING,
        "thresholds": _thresholds(cell), "errors": _errors(cell), "limit": cell.get("limit"),
    }


def with_plans(detail: dict[str, Any], plans: RunPlans) -> dict[str, Any]:
    """A copy of the run's view model with each cell's ``plan``, the ``answer`` rows and ``plans``
    (where the plans came from, and the hint for cells without one); the cached detail is left as it is."""
    cells = [{**c, "plan": plan_view(plans.cells.get(c["id"]))} for c in detail.get("cells") or []]
    return {**detail, "cells": cells, "answer": [answer_row(c, plans) for c in cells], "plans": plans.to_json()}
