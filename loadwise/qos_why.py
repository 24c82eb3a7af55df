"""Why a ``qos-plan`` tick did what it did, or nothing: per rule the sample against its waterline and how many
consecutive samples are over (or under) out of how many are needed, the scheduling cool-down, and the eviction
rate limit.  Read from the engine after each tick (its detector's counters and memory); nothing is changed."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from agent.qos.detect import Status, above
from agent.qos.runtime import TickReport, WaterlineRuntime
from common.clock import to_rfc3339

__all__ = ["TickWhy", "explain_tick"]


@dataclass(frozen=True, slots=True)
class TickWhy:
    rules: tuple[dict[str, Any], ...]
    cool_down_until: float | None  # scheduling stays disabled until then although no rule is active
    evictions_in_window: int
    max_evictions: int
    window_seconds: float

    def to_json(self) -> dict[str, Any]:
        return {"rules": list(self.rules),
                "schedulingCoolDownUntil": to_rfc3339(self.cool_down_until) if self.cool_down_until else None,
                "evictionRateLimit": {"evictionsInWindow": self.evictions_in_window, "max": self.max_evictions,
                                      "windowSeconds": self.window_seconds}}

    def lines(self) -> list[str]:
        out = [_rule_line(r) for r in self.rules]
        if self.cool_down_until is not None:
            out.append(f"scheduling stays disabled until {to_rfc3339(self.cool_down_until)}: the cool-down after the "
                       "last trigger")
        if self.evictions_in_window >= self.max_evictions:
            out.append(f"eviction rate limit reached: {self.evictions_in_window} of {self.max_evictions} "
                       f"evictions in the last {self.window_seconds:g}s")
        return out


def _number(value: float | None) -> str:
    return "missing" if value is None else f"{value:g}"


def _rule_line(r: dict[str, Any]) -> str:
    head = f"rule {r['rule']}{' (Preview: reported, never acted on)' if r['preview'] else ''}: "
    if r.get("error"):
        return head + f"not evaluated: {r['error']}"
    sample = f"{r['metric']} {_number(r['value'])} {'>' if r['over'] else '<='} {r['waterline']:g}"
    if r["active"] and r["over"]:
        return head + f"{sample}: active ({r['samplesOver']} of {r['samplesNeeded']} samples over)"
    if r["active"]:
        return head + (f"{sample}: still active, {r['samplesUnder']} of {r['restoreNeeded']} samples under the line "
                       "needed to restore")
    if r["over"]:
        return head + (f"{sample}: {r['samplesOver']} of {r['samplesNeeded']} consecutive samples over the line "
                       "needed to trigger")
    return head + f"{sample}: under the line"


def explain_tick(engine: WaterlineRuntime, report: TickReport, last_trigger: float | None) -> TickWhy:
    """The reasons for ``report``; ``last_trigger`` is the time of the latest tick a non-Preview rule triggered."""
    rules = tuple(_rule(engine, r) for r in report.rules)
    acting = [r for r in report.rules if not r.rule.preview]
    cool_down = max((r.rule.action.cool_down_seconds for r in acting), default=0)
    until = None
    if (report.scheduling == "disabled" and not any(r.active for r in acting) and last_trigger is not None
            and report.time < last_trigger + cool_down):
        until = last_trigger + cool_down
    limit = engine.eviction_limit
    recent = _within(engine.memory.eviction_times, report.time - limit.per_seconds)
    return TickWhy(rules, until, recent, limit.max_evictions, limit.per_seconds)


def _within(times: Iterable[float], since: float) -> int:
    return sum(1 for t in times if t > since)


def _rule(engine: WaterlineRuntime, r: Any) -> dict[str, Any]:
    c = engine.detector.counters(r.key)
    line = r.rule.metric.value
    entry: dict[str, Any] = {
        "rule": r.key, "metric": r.rule.metric.name, "value": r.value, "waterline": float(line),
        "over": r.value is not None and above(r.value, line), "status": str(r.status), "active": r.active,
        "samplesOver": c.over, "samplesNeeded": r.rule.avoidance_threshold,
        "samplesUnder": c.under, "restoreNeeded": r.rule.restore_threshold, "preview": r.rule.preview,
    }
    if r.status is Status.ERROR:
        entry["error"] = r.error
    return entry
