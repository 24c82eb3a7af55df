"""``loadwise qos-plan``: run the waterline engine offline on a node state and print its decisions.

The state file is the agent's own ``/debug/state`` dump (or a hand-written one, possibly with several
``ticks``), so a user can replay a policy against a real node before deploying it.  Nothing is actuated:
the engine runs in dry-run against recording actuators, with the same detection, ranking, gap and rate
limit as the agent.  Every tick also says why (``loadwise.qos_why``): per rule its sample against the
waterline and the consecutive samples over (or under) the line out of those needed, the scheduling cool-down
and the eviction rate limit, so a tick where nothing happened says what is missing.  A Preview rule that
triggers is reported as triggered (and never acted on), as crane's analyzer records it.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from agent.qos.plan import EvictionRateLimit
from agent.qos.policy import PolicyStore
from agent.qos.runtime import TickReport, WaterlineRuntime
from agent.qos.state import NodeState, load_ticks
from common.clock import FakeClock
from common.config import ConfigError, load_document, load_objects
from common.waterline import WaterlinePolicy
from loadwise.argtypes import non_negative_int, positive_float
from loadwise.output import add_output_flag
from loadwise.qos_why import TickWhy, explain_tick

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--policy", required=True, metavar="FILE", help="WaterlinePolicy YAML/JSON (one or more)")
    parser.add_argument("--state", required=True, metavar="FILE", help="node state (/debug/state), may hold ticks")
    add_output_flag(parser)
    parser.add_argument("--max-evictions", type=non_negative_int, default=1, metavar="N",
                        help="per-node eviction rate limit: at most N accepted evictions ... (default 1)")
    parser.add_argument("--eviction-window", type=positive_float, default=10.0, metavar="SECONDS",
                        help="... in any window of this many seconds (default 10)")


def _invalid(args: argparse.Namespace, field: str, message: str) -> int:
    if args.output == "json":
        print(json.dumps({"valid": False, "invalidField": field, "error": message}, indent=2))
    else:
        print(f"qos-plan: invalid policy: {field}: {message}" if field else f"qos-plan: {message}", file=sys.stderr)
    return 2


def _load_policies(args: argparse.Namespace) -> list[dict[str, Any]] | int:
    """The file's WaterlinePolicy objects, each validated; an exit code when the file is invalid."""
    try:
        objects = load_objects(args.policy)
    except ConfigError as exc:
        return _invalid(args, exc.field, str(exc))
    policies = [o for o in objects if o.get("kind") == "WaterlinePolicy"]
    if not policies:
        return _invalid(args, "kind", f"{args.policy}: no WaterlinePolicy object found")
    for i, obj in enumerate(policies):
        try:
            WaterlinePolicy.parse(obj)
        except ConfigError as exc:
            prefix = f"items[{i}]." if len(policies) > 1 else ""
            return _invalid(args, f"{prefix}{exc.field}", exc.message)
    return policies


def _replay(args: argparse.Namespace, store: PolicyStore, ticks: list[NodeState]) -> list[tuple[TickReport, TickWhy]]:
    """Run a dry-run engine over the ticks in order, explaining each one."""
    clock = FakeClock(ticks[0].time)
    engine = WaterlineRuntime(None, ticks[0].node, clock, dry_run=True, policies=store, replay=True,
                              eviction_limit=EvictionRateLimit(args.max_evictions, args.eviction_window))
    reports: list[tuple[TickReport, TickWhy]] = []
    last_trigger: float | None = None
    for state in ticks:
        if state.time > clock.now():
            clock.set(state.time)
        report = engine.tick(state)
        if any(r.triggered and not r.rule.preview for r in report.rules):
            last_trigger = report.time
        reports.append((report, explain_tick(engine, report, last_trigger)))
    return reports


def run(args: argparse.Namespace) -> int:
    policies = _load_policies(args)
    if isinstance(policies, int):
        return policies
    try:
        raw_state = load_document(args.state)
        ticks = load_ticks(raw_state, source=str(args.state))
    except ConfigError as exc:
        print(f"qos-plan: invalid state: {exc}", file=sys.stderr)
        return 2
    store = PolicyStore()
    store.replace_all(policies)
    reports = _replay(args, store, ticks)
    has_ticks = isinstance(raw_state, dict) and raw_state.get("ticks") is not None
    if args.output == "json":
        docs = [{**r.to_json(), **why.to_json()} for r, why in reports]
        print(json.dumps(docs if has_ticks else docs[0], indent=2))
        return 0
    applied = [p.name for p in store.applicable(ticks[0].labels)]
    print(f"node {ticks[0].node}: policies {', '.join(applied) or '(none match the node labels)'}")
    for p in store.policies():
        for w in p.warnings:
            print(f"warning: WaterlinePolicy {p.name}: {w}")
    for i, (r, why) in enumerate(reports):
        _print_text(r, why, i if has_ticks else None)
    return 0


def _print_text(r: TickReport, why: TickWhy, index: int | None) -> None:
    head = f"tick {index} " if index is not None else ""
    print(f"{head}at {r.to_json()['time']}: scheduling {r.scheduling}")
    _print_rules_line(r, why)
    if r.order:
        print(f"  order: {', '.join(r.order)}")
    for a in r.actions:
        released = ", ".join(f"{k}={v}" for k, v in a.to_json()["released"].items())
        if a.action == "evict":
            print(f"  evict {a.pod} grace={a.grace_period_seconds}s released[{released}]")
        else:
            quotas = ", ".join(q.describe() for q in a.containers)
            print(f"  throttle {a.direction} {a.pod} quota {quotas} released[{released}]")
    for s in r.skipped:
        print(f"  skipped {s.action} {s.pod}: {s.reason}")
    for n in r.notes:
        print(f"  note: {n}")
    for e in r.errors:
        print(f"  error: {e}")
    print("  nothing happened:" if not r.actions and not r.triggered and not r.restored else "  rules:")
    for line in why.lines():
        print(f"    {line}")


def _print_rules_line(r: TickReport, why: TickWhy) -> None:
    """The rules that triggered or restored this tick, Preview rules apart."""
    preview_triggered = tuple(x["rule"] for x in why.rules if x["preview"] and x["status"] == "triggered")
    preview_restored = tuple(x["rule"] for x in why.rules if x["preview"] and x["status"] == "restored")
    for label, items in (("triggered", r.triggered), ("restored", r.restored),
                         ("triggered (Preview: reported only)", preview_triggered),
                         ("restored (Preview)", preview_restored)):
        if items:
            print(f"  {label}: {', '.join(items)}")
