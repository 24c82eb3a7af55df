"""The destination proof: the scheduler itself, with its own plugins and conf, must place the pod elsewhere.

For one candidate the probe is a copy of the scheduling snapshot in which the candidate is pending again (on our
scheduler), the pods already planned to move this round sit on their destinations, and every node that may not
receive the pod is closed (unschedulable): the source, stale and hot nodes, and any node that the moved usage -
the reservations of earlier rounds (which the scheduler counts too), this round's moves and the pod's own reported
usage - would lift above a high threshold.  One ``explain`` session then runs over the probe.  The node it binds
the pod to is the expected destination; if it binds nowhere, the pod stays.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from common.clock import FakeClock
from common.objects import NodeView, PodView
from common.qos import PriorityClass
from common.resources import Resources
from scheduler.conf import SchedulerConf
from scheduler.explain import explain
from scheduler.framework.snapshot import Snapshot

from .classify import NodeLoad, Thresholds, over_high

__all__ = ["Proof", "Probe", "prove", "pending_copy"]


@dataclass(frozen=True, slots=True)
class Proof:
    destination: str | None
    why: str  # the scheduler's message when no node took the pod


@dataclass(frozen=True, slots=True)
class Probe:
    """What a proof runs against: the round's snapshot, loads, thresholds and the usage already on its way."""

    snapshot: Snapshot
    conf: SchedulerConf
    scheduler_name: str
    loads: Mapping[str, NodeLoad]
    thresholds: Thresholds
    closed: frozenset[str]  # nodes that receive nothing this round (stale, hot)
    incoming: Mapping[str, Resources]  # node -> usage reserved or planned to arrive
    incoming_prod: Mapping[str, Resources]


def pending_copy(pod: PodView, scheduler_name: str, node: str = "") -> PodView:
    """The pod as its replacement would look to the scheduler: unbound (or bound to ``node``), on our scheduler."""
    raw: dict[str, Any] = copy.deepcopy(dict(pod.raw))
    spec = raw.setdefault("spec", {})
    spec["schedulerName"] = scheduler_name
    spec.pop("nodeName", None)
    meta = raw.setdefault("metadata", {})
    meta.pop("deletionTimestamp", None)
    if node:
        spec["nodeName"] = node
        raw["status"] = {"phase": "Running"}
    else:
        raw["status"] = {"phase": "Pending"}
    return PodView.parse(raw)


def _stays_cool(load: NodeLoad, probe: Probe, usage: Resources, prod: bool) -> bool:
    after = load.usage + probe.incoming.get(load.name, Resources()) + usage
    prod_after = load.prod_usage + probe.incoming_prod.get(load.name, Resources())
    if prod:
        prod_after = prod_after + usage
    return not over_high(load, probe.thresholds, after, prod_after)


def _closed(probe: Probe, source: str, usage: Resources, prod: bool) -> set[str]:
    closed = set(probe.closed) | {source}
    for name, load in probe.loads.items():
        if name not in closed and not _stays_cool(load, probe, usage, prod):
            closed.add(name)
    return closed


def _nodes(nodes: Sequence[NodeView], closed: set[str]) -> list[NodeView]:
    return [replace(n, unschedulable=True) if n.name in closed and not n.unschedulable else n for n in nodes]


def prove(probe: Probe, pod: PodView, usage: Resources, source: str, moved: Mapping[str, PodView],
          now: float) -> Proof:
    """Where the scheduler would place ``pod`` (reported ``usage``) if it left ``source``; ``moved``: this round's
    earlier moves, pod key -> the pod bound to its destination."""
    prod = pod.priority_class == PriorityClass.PROD
    closed = _closed(probe, source, usage, prod)
    if len(closed) >= len(probe.snapshot.nodes):
        return Proof(None, "no node other than the source stays below its high thresholds with the pod")
    pending = pending_copy(pod, probe.scheduler_name)
    pods = [moved.get(p.key, p) for p in probe.snapshot.pods if p.node_name and p.key != pod.key]
    snap = probe.snapshot
    trial = Snapshot(_nodes(snap.nodes, closed), pods + [pending], snap.podgroups, snap.queues, snap.priority_classes,
                     snap.node_metrics, dict(snap.extra))
    report = explain(trial, probe.conf, clock=FakeClock(now), scheduler_name=probe.scheduler_name)
    node = report["placements"].get(pending.key)
    if node is None or node in closed:
        info = report["pods"].get(pending.key) or {}
        return Proof(None, str(info.get("message") or "the scheduler placed it nowhere"))
    return Proof(str(node), "")
