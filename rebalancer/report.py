"""A plan for people and for programs: the text table ``--dry-run`` and ``rebalance-plan`` print, and its JSON."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from common.clock import to_rfc3339

from .plan import Move, Plan

__all__ = ["describe", "plan_json", "render_plan"]


def _pct(percents: Mapping[str, float]) -> str:
    return " ".join(f"{r} {v:.0f}%" for r, v in sorted(percents.items()))


def plan_json(plan: Plan) -> dict[str, Any]:
    thr = plan.thresholds
    return {
        "time": to_rfc3339(plan.now),
        "note": plan.note,
        "thresholds": None if thr is None else {"low": dict(thr.low), "high": dict(thr.high),
                                                "prodLow": dict(thr.prod_low), "prodHigh": dict(thr.prod_high)},
        "nodes": [{"name": n.name, "class": n.kind.value, "percent": dict(n.percent), "abnormal": n.abnormal}
                  for n in plan.nodes],
        "moves": [{"pod": m.pod, "workload": m.workload, "source": m.source, "destination": m.destination,
                   "usage": dict(m.usage.as_dict()), "reason": m.reason,
                   "sourceBefore": dict(m.source_before), "sourceAfter": dict(m.source_after),
                   "destinationBefore": dict(m.destination_before), "destinationAfter": dict(m.destination_after)}
                  for m in plan.moves],
        "kept": [{"pod": s.pod, "source": s.source, "why": s.why} for s in plan.skipped],
        "destinationChecks": plan.checks,
    }


def render_plan(plan: Plan) -> str:
    lines = [f"rebalancing plan at {to_rfc3339(plan.now)}"]
    if plan.thresholds is not None:
        lines.append(f"  thresholds: low {_pct(plan.thresholds.low)}; high {_pct(plan.thresholds.high)}")
    hot = [n for n in plan.nodes if n.kind.value == "high"]
    counts = {k: sum(1 for n in plan.nodes if n.kind.value == k) for k in ("low", "appropriate", "high", "stale")}
    lines.append("  nodes: " + ", ".join(f"{v} {k}" for k, v in counts.items()))
    for n in hot:
        lines.append(f"  hot {n.name}: {_pct(n.percent)}{' (confirmed)' if n.abnormal else ''}")
    if plan.note:
        lines.append(f"  {plan.note}")
    for m in plan.moves:
        lines.append(f"move {m.pod}: {describe(m)}")
    for s in plan.skipped:
        lines.append(f"keep {s.pod or s.source}: {s.why}")
    if not plan.moves:
        lines.append("no move")
    return "\n".join(lines)


def describe(move: Move) -> str:
    """One line: why the pod moved, and the numbers before and after on both nodes (the pod's event says this)."""
    return (f"{move.reason}: evicted from {move.source} ({_pct(move.source_before)} -> {_pct(move.source_after)}); "
            f"expected on {move.destination} ({_pct(move.destination_before)} -> {_pct(move.destination_after)})")
