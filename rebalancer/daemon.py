"""The rebalancer's adapter: plan a round on a snapshot, then reserve, evict, and report through the cluster.

Per proven move, in this order: the moved usage is reserved on the destination node (its annotation, which the
scheduler reads), then the pod is evicted through the Eviction API.  A refusal (429: a PodDisruptionBudget) is not
a move: the reservation is withdrawn and a Warning event says why.  An accepted eviction starts the cool-downs,
gets an event on the pod and sets the source node's ``LoadwiseRebalanced`` condition.  With ``dryRun`` nothing is
written; the plan is all there is.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from common.clock import Clock, to_rfc3339
from common.cluster import ApiError, Cluster, EventRecord, TooManyRequests
from common.objects import NodeView
from common.reservation import RESERVATIONS_ANNOTATION, Reservation, format_reservations
from common.resources import CPU, MEMORY
from scheduler.framework.snapshot import Snapshot

from .classify import NodeClass
from .plan import Move, Plan, Rebalancer
from .report import describe

__all__ = ["RebalancerMetrics", "RebalancerDaemon", "RoundResult", "CONDITION_TYPE", "COMPONENT"]

log = logging.getLogger(__name__)

CONDITION_TYPE = "LoadwiseRebalanced"
COMPONENT = "loadwise-rebalancer"


class RebalancerMetrics:
    """Declared once per rebalancer, in its own registry."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = r = registry or CollectorRegistry()
        self.evictions = Counter("loadwise_rebalancer_evictions_total",
                                 "Proven moves, by result: evicted, refused (429, a PodDisruptionBudget), failed, "
                                 "planned (dry run)", ["result"], registry=r)
        self.moved_cpu = Counter("loadwise_rebalancer_moved_cpu_millicores_total",
                                 "Reported CPU usage of the pods evicted off hot nodes", registry=r)
        self.moved_memory = Counter("loadwise_rebalancer_moved_memory_bytes_total",
                                    "Reported memory usage of the pods evicted off hot nodes", registry=r)
        self.nodes = Gauge("loadwise_rebalancer_nodes", "Nodes by class in the last round (low, appropriate, high, "
                           "stale)", ["class"], registry=r)
        self.abnormal = Gauge("loadwise_rebalancer_abnormal_nodes",
                              "Hot nodes the anomaly condition confirmed in the last round", registry=r)
        self.checks = Counter("loadwise_rebalancer_destination_checks_total",
                              "Destination proofs run, by result (proven, refused)", ["result"], registry=r)
        self.round_seconds = Histogram("loadwise_rebalancer_round_duration_seconds", "Wall time of one round",
                                       buckets=(0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30), registry=r)
        self.is_leader = Gauge("loadwise_rebalancer_leader", "1 while this replica holds the lease", registry=r)


@dataclass(slots=True)
class RoundResult:
    plan: Plan
    evicted: list[Move] = field(default_factory=list)
    refused: list[Move] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)


class RebalancerDaemon:
    def __init__(self, cluster: Cluster, rebalancer: Rebalancer, clock: Clock, snapshot: Callable[[], Snapshot], *,
                 metrics: RebalancerMetrics | None = None) -> None:
        self.cluster = cluster
        self.rebalancer = rebalancer
        self.clock = clock
        self.snapshot = snapshot
        self.metrics = metrics or RebalancerMetrics()
        self._relieved: set[str] = set()  # nodes whose condition says True

    def run_once(self) -> RoundResult:
        t0 = time.perf_counter()
        snap = self.snapshot()
        now = self.clock.now()
        plan = self.rebalancer.plan(snap, now)
        result = RoundResult(plan)
        self._observe(plan)
        if self.rebalancer.args.dry_run:
            self.metrics.evictions.labels("planned").inc(len(plan.moves))
        else:
            nodes = {n.name: n for n in snap.nodes}
            self._prune(snap, nodes, now)
            for move in plan.moves:
                self._execute(move, nodes, snap, now, result)
            self._conditions(plan, result, now)
        self.metrics.round_seconds.observe(time.perf_counter() - t0)
        return result

    def _observe(self, plan: Plan) -> None:
        for kind in NodeClass:
            self.metrics.nodes.labels(kind.value).set(plan.count(kind))
        self.metrics.abnormal.set(sum(1 for n in plan.nodes if n.abnormal))
        self.metrics.checks.labels("proven").inc(len(plan.moves))
        self.metrics.checks.labels("refused").inc(sum(1 for s in plan.skipped if s.why.startswith("no destination")))

    # -- reservations -----------------------------------------------------------------------------------------
    def _write(self, node: str, entries: list[Reservation]) -> None:
        self.cluster.patch("Node", node, {"metadata": {"annotations": {RESERVATIONS_ANNOTATION:
                                                                        format_reservations(entries)}}})

    def _prune(self, snap: Snapshot, nodes: dict[str, NodeView], now: float) -> None:
        """Drop expired reservations and those whose pod has arrived, from every node that still carries any."""
        for name, node in nodes.items():
            if RESERVATIONS_ANNOTATION not in node.annotations:
                continue
            live = self.rebalancer.live_reservations(node.annotations, name, snap, now)
            if format_reservations(live) != node.annotations.get(RESERVATIONS_ANNOTATION):
                try:
                    self._write(name, live)
                except ApiError as exc:
                    log.warning("could not prune reservations on node %s: %s", name, exc)

    def _reserve(self, move: Move, snap: Snapshot, now: float, add: bool) -> None:
        node = self.cluster.get("Node", move.destination)
        annotations = (node.get("metadata") or {}).get("annotations") or {}
        entries = [r for r in self.rebalancer.live_reservations(annotations, move.destination, snap, now)
                   if r.pod != move.pod]
        if add:
            entries.append(move.reservation(now, self.rebalancer.args.reservation_seconds))
        self._write(move.destination, entries)

    # -- one move -----------------------------------------------------------------------------------------------
    def _execute(self, move: Move, nodes: dict[str, NodeView], snap: Snapshot, now: float,
                 result: RoundResult) -> None:
        try:
            self._reserve(move, snap, now, add=True)
            self.cluster.evict(move.namespace, move.name)
        except TooManyRequests as exc:
            result.refused.append(move)
            self.metrics.evictions.labels("refused").inc()
            self._withdraw(move, snap, now)
            self._event(move, "RebalanceRefused", f"eviction refused: {exc}", "Warning")
            return
        except ApiError as exc:
            result.failed[move.pod] = str(exc)
            self.metrics.evictions.labels("failed").inc()
            self._withdraw(move, snap, now)
            log.warning("rebalancing %s failed: %s", move.pod, exc)
            return
        result.evicted.append(move)
        self.rebalancer.record(move, now)
        self.metrics.evictions.labels("evicted").inc()
        self.metrics.moved_cpu.inc(move.usage.get(CPU, 0))
        self.metrics.moved_memory.inc(move.usage.get(MEMORY, 0))
        self._event(move, "Rebalanced", describe(move), "Normal")

    def _withdraw(self, move: Move, snap: Snapshot, now: float) -> None:
        try:
            self._reserve(move, snap, now, add=False)
        except ApiError as exc:  # it expires on its own
            log.warning("could not withdraw the reservation of %s on %s: %s", move.pod, move.destination, exc)

    def _event(self, move: Move, reason: str, message: str, kind: str) -> None:
        try:
            self.cluster.emit_event(EventRecord("Pod", move.name, move.namespace, reason, message, kind,
                                                component=COMPONENT, action="Evict"))
        except ApiError as exc:
            log.info("event for %s not written: %s", move.pod, exc)

    # -- node condition --------------------------------------------------------------------------------------------
    def _conditions(self, plan: Plan, result: RoundResult, now: float) -> None:
        """True on a node pods were moved off (saying how many and why), False again once it is no longer hot."""
        moved: dict[str, list[Move]] = {}
        for m in result.evicted:
            moved.setdefault(m.source, []).append(m)
        hot = {n.name for n in plan.nodes if n.kind is NodeClass.HIGH}
        for node, moves in moved.items():
            message = f"moved {len(moves)} pod(s) off: {moves[0].reason}"
            self._condition(node, "True", "HotNodeRelieved", message, now)
            self._relieved.add(node)
        for node in sorted(self._relieved - hot - set(moved)):
            self._condition(node, "False", "NodeCool", "usage is below the high thresholds", now)
            self._relieved.discard(node)

    def _condition(self, node: str, status: str, reason: str, message: str, now: float) -> None:
        cond = {"type": CONDITION_TYPE, "status": status, "reason": reason, "message": message,
                "lastTransitionTime": to_rfc3339(now), "lastHeartbeatTime": to_rfc3339(now)}
        try:
            self.cluster.patch_conditions("Node", node, [cond])
        except ApiError as exc:
            log.info("condition on node %s not written: %s", node, exc)
