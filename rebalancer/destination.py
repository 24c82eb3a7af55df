"""The destination proof: the scheduler itself, with its own plugins and conf, must place the pod elsewhere.

For one candidate the probe is a copy of the scheduling snapshot in which the candidate is pending again (on our
scheduler), the pods already planned to move this round are gone from their sources and reserved on their
destinations exactly as the reservation annotations will say, and every node that may not receive the pod is
closed (unschedulable): the source, stale and hot nodes, the nodes another move of the round goes to, and any
node that the reserved usage plus the pod's own reported usage would lift above a destination threshold (the
high ones unless ``destinationThresholds`` sets them lower) or a prod high threshold.  One
``explain`` session then runs over the probe: the scheduler sees what its next session will see once the
evictions are done.  The node it binds the pod to is the expected destination; if it binds nowhere, the pod stays
(docs/design/rebalance.md §3).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from common.clock import FakeClock, to_rfc3339
from common.objects import NodeView, PodView
from common.qos import PriorityClass
from common.reservation import RESERVATIONS_ANNOTATION, Reservation, format_reservations
from common.resources import Resources
from scheduler.conf import SchedulerConf
from scheduler.explain import explain
from scheduler.framework.snapshot import Snapshot

from .classify import NodeLoad, Thresholds, above_destination

__all__ = ["Proof", "Probe", "prove", "pending_copy", "closed_to"]


@dataclass(frozen=True, slots=True)
class Proof:
    destination: str | None
    why: str  # the scheduler's message when no node took the pod


@dataclass(frozen=True, slots=True)
class Probe:
    """What a proof runs against: the round's snapshot, loads and thresholds, and the usage already on its way."""

    snapshot: Snapshot
    conf: SchedulerConf
    scheduler_name: str
    loads: Mapping[str, NodeLoad]
    thresholds: Thresholds
    closed: frozenset[str]  # nodes that receive nothing this round (stale, hot)
    reservations: Mapping[str, tuple[Reservation, ...]]  # node -> earlier rounds' live ones and this round's
    gone: frozenset[str] = frozenset()  # pods this round moves
    received: frozenset[str] = frozenset()  # nodes a move of this round goes to

    def incoming(self, node: str, *, prod_only: bool = False) -> Resources:
        """The usage reserved on ``node`` (of prod pods only, with ``prod_only``)."""
        total = Resources()
        for r in self.reservations.get(node, ()):
            if r.prod or not prod_only:
                total = total + r.usage
        return total

    def moved(self, r: Reservation, node: str) -> Probe:
        """This probe with one more move: ``r`` reserved on ``node``, its pod gone from the source."""
        reservations = dict(self.reservations)
        reservations[node] = (*reservations.get(node, ()), r)
        return replace(self, reservations=reservations, gone=self.gone | {r.pod}, received=self.received | {node})


def pending_copy(pod: PodView, scheduler_name: str, now: float) -> PodView:
    """The pod as its replacement would look to the scheduler at ``now``: just created, unbound, pending, on our
    scheduler (just created: a scheduler that relaxes its filters for pods pending long must not relax them here)."""
    raw: dict[str, Any] = copy.deepcopy(dict(pod.raw))
    spec = raw.setdefault("spec", {})
    spec["schedulerName"] = scheduler_name
    spec.pop("nodeName", None)
    meta = raw.setdefault("metadata", {})
    meta.pop("deletionTimestamp", None)
    meta["creationTimestamp"] = to_rfc3339(now)
    raw["status"] = {"phase": "Pending"}
    return PodView.parse(raw)


def _stays_cool(load: NodeLoad, probe: Probe, usage: Resources, prod: bool) -> bool:
    """Whether ``load``'s node, with its reservations and ``usage`` added, stays at or below the destination
    thresholds (node usage) and the prod high thresholds (prod usage)."""
    after = load.usage + probe.incoming(load.name) + usage
    prod_after = load.prod_usage + probe.incoming(load.name, prod_only=True)
    if prod:
        prod_after = prod_after + usage
    return not above_destination(load, probe.thresholds, after, prod_after)


def closed_to(probe: Probe, source: str, usage: Resources, prod: bool) -> set[str]:
    """The nodes the pod may not go to: see the module docstring.  A node takes at most one moved pod per round:
    each proof then holds whatever order the next session places the replacements in, since no later move of the
    round adds load to a destination an earlier proof counted on."""
    closed = set(probe.closed) | probe.received | {source}
    for name, load in probe.loads.items():
        if name not in closed and not _stays_cool(load, probe, usage, prod):
            closed.add(name)
    return closed


def _node(node: NodeView, probe: Probe, closed: set[str]) -> NodeView:
    """The node as the probe's scheduler sees it: closed or not, with the reservations the rebalancer will write."""
    annotations = dict(node.annotations)
    text = format_reservations(probe.reservations.get(node.name, ()))
    if text is None:
        annotations.pop(RESERVATIONS_ANNOTATION, None)
    else:
        annotations[RESERVATIONS_ANNOTATION] = text
    return replace(node, unschedulable=node.unschedulable or node.name in closed, annotations=annotations)


def prove(probe: Probe, pod: PodView, usage: Resources, source: str, now: float) -> Proof:
    """Where the scheduler would place ``pod`` (reported ``usage``) if it left ``source``."""
    prod = pod.priority_class == PriorityClass.PROD
    closed = closed_to(probe, source, usage, prod)
    if len(closed) >= len(probe.snapshot.nodes):
        return Proof(None, "no node other than the source stays below its destination thresholds with the pod")
    pending = pending_copy(pod, probe.scheduler_name, now)
    gone = probe.gone | {pod.key}
    pods = [p for p in probe.snapshot.pods if p.node_name and p.key not in gone]
    snap = probe.snapshot
    nodes = [_node(n, probe, closed) for n in snap.nodes]
    trial = Snapshot(nodes, pods + [pending], snap.podgroups, snap.queues, snap.priority_classes, snap.node_metrics,
                     dict(snap.extra))
    report = explain(trial, probe.conf, clock=FakeClock(now), scheduler_name=probe.scheduler_name)
    node = report["placements"].get(pending.key)
    if node is None or node in closed:
        info = report["pods"].get(pending.key) or {}
        return Proof(None, str(info.get("message") or "the scheduler placed it nowhere"))
    return Proof(str(node), "")
