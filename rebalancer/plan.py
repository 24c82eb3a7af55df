"""One rebalancing round, pure: a snapshot and a time in, a plan of proven moves out.

The round classifies the nodes, lets the anomaly detector confirm the hot ones, and walks the confirmed sources
hottest first.  On each it takes the removable pods in LowNodeLoad's order and plans a move only while the source
is still above a high threshold counting the usage already planned off it, only within the per-round limits, the
budget across rounds (``maxEvictionsPercent``) and the cool-downs, only for a pod big enough to matter for the
source's excess, and only when the scheduler proves a destination (``rebalancer.destination``).  :class:`Rebalancer`
keeps what must outlive a round (detector, cool-downs); :meth:`Rebalancer.record` is told which moves happened.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from common.objects import PodView
from common.qos import PriorityClass
from common.reservation import RESERVATIONS_ANNOTATION, Reservation, active, parse_reservations, workload_of
from common.resources import Resources
from scheduler.conf import SchedulerConf
from scheduler.framework.snapshot import DEFAULT_SCHEDULER_NAME, Snapshot

from .anomaly import AnomalyDetector
from .args import RebalanceArgs
from .classify import NodeClass, NodeLoad, Thresholds, above_source, classify, node_loads, over_high, thresholds
from .destination import Probe, Proof, closed_to, prove
from .rank import Candidate, rank, removable

__all__ = ["Move", "Skip", "NodeReport", "Plan", "Rebalancer"]


@dataclass(frozen=True, slots=True)
class Move:
    """A proven move: evict ``pod`` from ``source``; the scheduler placed its copy on ``destination``."""

    pod: str
    workload: str
    source: str
    destination: str
    usage: Resources
    prod: bool
    reason: str
    source_before: Mapping[str, float]
    source_after: Mapping[str, float]
    destination_before: Mapping[str, float]
    destination_after: Mapping[str, float]

    @property
    def namespace(self) -> str:
        return self.pod.partition("/")[0]

    def reservation(self, now: float, seconds: float) -> Reservation:
        """The reservation this move writes on its destination at ``now``, for ``seconds``."""
        return Reservation(self.pod, self.workload, self.source, self.usage, self.prod, now, now + seconds)

    @property
    def name(self) -> str:
        return self.pod.partition("/")[2]


@dataclass(frozen=True, slots=True)
class Skip:
    pod: str
    source: str
    why: str


@dataclass(frozen=True, slots=True)
class NodeReport:
    name: str
    kind: NodeClass
    percent: Mapping[str, float]
    abnormal: bool


@dataclass(slots=True)
class Plan:
    now: float
    thresholds: Thresholds | None = None
    nodes: list[NodeReport] = field(default_factory=list)
    moves: list[Move] = field(default_factory=list)
    skipped: list[Skip] = field(default_factory=list)
    note: str = ""
    checks: int = 0  # destination proofs run

    def count(self, kind: NodeClass) -> int:
        return sum(1 for n in self.nodes if n.kind is kind)


def _percents(load: NodeLoad, usage: Mapping[str, int], resources: Sequence[str]) -> dict[str, float]:
    return {r: round(load.percent(r, usage), 1) for r in resources}


def _reason(load: NodeLoad, thr: Thresholds, usage: Mapping[str, int]) -> str:
    parts = []
    for r in over_high(load, thr, usage):
        limit = thr.high.get(r, thr.prod_high.get(r, 0.0))
        parts.append(f"{r} usage({load.percent(r, usage):.0f}%)>threshold({limit:.0f}%)")
    return ", ".join(parts)


def _weighted(load: NodeLoad, args: RebalanceArgs) -> float:
    return sum(args.weight(r) * load.percent(r) for r in args.resources)


@dataclass(slots=True)
class _Round:
    """The running tallies of one round."""

    plan: Plan
    probe: Probe
    per_node: Counter[str] = field(default_factory=Counter)
    per_namespace: Counter[str] = field(default_factory=Counter)
    per_workload: Counter[str] = field(default_factory=Counter)
    budget: int | None = None  # moves this round may still plan under maxEvictionsPercent (None: no limit)


def _pods_by_node(snapshot: Snapshot) -> dict[str, list[PodView]]:
    """The snapshot's bound pods by node name, in snapshot order."""
    by_node: dict[str, list[PodView]] = {}
    for pod in snapshot.pods:
        if pod.node_name:
            by_node.setdefault(pod.node_name, []).append(pod)
    return by_node


class Rebalancer:
    def __init__(self, args: RebalanceArgs, conf: SchedulerConf, *,
                 scheduler_name: str = DEFAULT_SCHEDULER_NAME) -> None:
        self.args = args
        self.conf = conf
        self.scheduler_name = scheduler_name
        self.detector = AnomalyDetector(args.anomaly_condition)
        self.relieved: dict[str, float] = {}  # node -> time of its last eviction
        self.workloads: dict[str, float] = {}  # workload -> time of its last eviction
        self.evictions: list[float] = []  # times of the accepted evictions within maxEvictionsWindowSeconds

    # -- state the adapters update ---------------------------------------------------------------------------
    def record(self, move: Move, now: float) -> None:
        """``move``'s eviction was accepted: start the cool-downs, and make the detector observe the source anew."""
        self.relieved[move.source] = now
        self.workloads[move.workload] = now
        self.evictions.append(now)
        self.detector.reset(move.source)

    # -- the round -------------------------------------------------------------------------------------------
    def plan(self, snapshot: Snapshot, now: float) -> Plan:
        """One round: classify the nodes, and when enough are low and some are confirmed hot, pick the moves that
        relieve the hot ones within the eviction budget (each move proven to have a destination)."""
        args = self.args
        plan = Plan(now)
        if args.paused:
            plan.note = "paused"
            return plan
        nodes = [n for n in snapshot.nodes if args.node_selector.matches(n.labels)]
        loads = node_loads(nodes, snapshot.node_metrics, now, args.node_metric_expiration_seconds)
        thr = plan.thresholds = thresholds(args, loads)
        classes = self._observe(plan, loads, thr, now)
        low = plan.count(NodeClass.LOW)
        if low <= args.number_of_nodes:
            plan.note = f"{low} low node(s), not more than numberOfNodes ({args.number_of_nodes})"
            return plan
        sources = self._sources(plan, loads)
        if not sources:
            plan.note = "no node confirmed hot"
            return plan
        rnd = _Round(plan, Probe(snapshot, self.conf, self.scheduler_name, {ld.name: ld for ld in loads}, thr,
                                 self._closed(classes), self._reserved(snapshot, now)))
        by_node = _pods_by_node(snapshot)
        rnd.budget = self._budget(sum(len(by_node.get(n.name, ())) for n in nodes), now)
        for source in sources:
            self._relieve(rnd, source, by_node.get(source.name, []), snapshot, now)
        return plan

    def _sources(self, plan: Plan, loads: Sequence[NodeLoad]) -> list[NodeLoad]:
        """The nodes confirmed hot this round, hottest (by weighted usage) first."""
        confirmed = {n.name for n in plan.nodes if n.abnormal and n.kind is NodeClass.HIGH}
        return sorted((ld for ld in loads if ld.name in confirmed), key=lambda ld: -_weighted(ld, self.args))

    def _closed(self, classes: Mapping[str, NodeClass]) -> frozenset[str]:
        """The nodes no pod may move to: hot and stale ones, and with ``lowDestinationsOnly`` appropriate ones."""
        shut = (NodeClass.HIGH, NodeClass.STALE, NodeClass.APPROPRIATE) if self.args.low_destinations_only else (
            NodeClass.HIGH, NodeClass.STALE)
        return frozenset(n for n, k in classes.items() if k in shut)

    def _reserved(self, snapshot: Snapshot, now: float) -> dict[str, tuple[Reservation, ...]]:
        """The live reservations of every node that carries the annotation."""
        return {n.name: tuple(self.live_reservations(n.annotations, n.name, snapshot, now))
                for n in snapshot.nodes if RESERVATIONS_ANNOTATION in n.annotations}

    def _observe(self, plan: Plan, loads: Sequence[NodeLoad], thr: Thresholds, now: float) -> dict[str, NodeClass]:
        """Classify every node, feed the anomaly detector, and report both in the plan."""
        classes = {load.name: classify(load, thr) for load in loads}
        self.detector.forget(set(classes))
        for load in loads:
            kind = classes[load.name]
            abnormal = kind is not NodeClass.STALE and self.detector.observe(load.name, kind is NodeClass.HIGH, now)
            plan.nodes.append(NodeReport(load.name, kind, _percents(load, load.usage, self.args.resources), abnormal))
        return classes

    def live_reservations(self, annotations: Mapping[str, str], node: str, snapshot: Snapshot,
                          now: float) -> list[Reservation]:
        """The node's reservations still to honour: unexpired, and whose workload has no pod started there since
        (once the replacement runs on the node, its own usage and estimate count instead)."""
        try:
            entries = active(parse_reservations(annotations, node=node), now)
        except ValueError:
            return []
        if not entries:
            return []
        arrived = {(workload_of(p), p.creation_time or 0.0) for p in snapshot.pods if p.node_name == node}
        return [r for r in entries if not any(w == r.workload and t >= r.since for w, t in arrived)]

    def _budget(self, pods: int, now: float) -> int | None:
        """How many moves this round may plan: ``maxEvictionsPercent`` of the ``pods`` on the selected nodes (at
        least one) per window, less the evictions of the window so far; None without that limit."""
        args = self.args
        if args.max_evictions_percent <= 0:
            return None
        self.evictions = [t for t in self.evictions if now - t < args.max_evictions_window_seconds]
        allowed = max(1, math.floor(pods * args.max_evictions_percent / 100.0))
        return max(0, allowed - len(self.evictions))

    def _cooling(self, until: dict[str, float], key: str, seconds: float, now: float) -> bool:
        last = until.get(key)
        return last is not None and now - last < seconds

    def _node_limit(self, rnd: _Round, source: str) -> str:
        """Why no further pod leaves ``source`` this round, or ""."""
        args = self.args
        if len(rnd.plan.moves) >= args.max_evictions_total:
            return f"maxEvictionsTotal ({args.max_evictions_total}) reached"
        if rnd.budget is not None and len(rnd.plan.moves) >= rnd.budget:
            return (f"maxEvictionsPercent ({args.max_evictions_percent:g}% of the pods per "
                    f"{args.max_evictions_window_seconds:g} s) reached")
        if rnd.per_node[source] >= args.max_evictions_per_node:
            return f"maxEvictionsPerNode ({args.max_evictions_per_node}) reached"
        if rnd.plan.checks >= args.max_destination_checks:
            return f"maxDestinationChecks ({args.max_destination_checks}) reached"
        return ""

    def _limit(self, rnd: _Round, c: Candidate, now: float) -> str:
        """Why a per-namespace or per-workload limit or cool-down keeps ``c`` in place this round, or ""."""
        args = self.args
        workload = workload_of(c.pod)
        if args.max_evictions_per_namespace and rnd.per_namespace[c.pod.namespace] >= args.max_evictions_per_namespace:
            return f"maxEvictionsPerNamespace ({args.max_evictions_per_namespace}) reached"
        if rnd.per_workload[workload] >= args.max_evictions_per_workload:
            return f"maxEvictionsPerWorkload ({args.max_evictions_per_workload}) reached"
        if self._cooling(self.workloads, workload, args.workload_cooldown_seconds, now):
            return f"workload {workload} moved less than workloadCooldownSeconds ago"
        return ""

    def _relieve(self, rnd: _Round, source: NodeLoad, pods: list[PodView], snapshot: Snapshot, now: float) -> None:
        args, plan = self.args, rnd.plan
        if self._cooling(self.relieved, source.name, args.relieved_node_cooldown_seconds, now):
            plan.skipped.append(Skip("", source.name, "node relieved less than relievedNodeCooldownSeconds ago"))
            return
        over = over_high(source, plan.thresholds or rnd.probe.thresholds)
        metric = snapshot.node_metrics.get(source.name)
        ranked = rank(removable(pods, metric, args), source.node.allocatable, over, args)
        usage, prod_usage = source.usage, source.prod_usage
        for c in ranked:
            if not over_high(source, rnd.probe.thresholds, usage, prod_usage):
                return
            stop = self._node_limit(rnd, source.name)
            if stop:
                plan.skipped.append(Skip(c.key, source.name, stop))
                return
            why = self._limit(rnd, c, now) or self._too_small(rnd, c, source, usage, prod_usage)
            if why:
                plan.skipped.append(Skip(c.key, source.name, why))
                continue
            move = self._try(rnd, c, source, usage, now)
            if move is not None:
                usage = usage - c.usage
                if move.prod:
                    prod_usage = prod_usage - c.usage

    def _too_small(self, rnd: _Round, c: Candidate, source: NodeLoad, usage: Resources,
                   prod_usage: Resources) -> str:
        """Why ``c`` cannot matter for the source's excess, or "": the moves still allowed off the source this round,
        each as big as ``c``, would leave it above its source thresholds (the high ones unless configured lower).
        A pod that cannot cool its node spends an eviction (and its restart) on a node that stays hot, or soon is
        again."""
        slots = self.args.max_evictions_per_node - rnd.per_node[source.name]
        prod = c.pod.priority_class == PriorityClass.PROD
        relief = Resources({r: v * slots for r, v in c.usage.items()})
        after = usage - relief
        prod_after = prod_usage - relief if prod else prod_usage
        if above_source(source, rnd.probe.thresholds, after, prod_after):
            return "too small: it (and the moves still allowed off the node) would leave the source hot"
        return ""

    def _try(self, rnd: _Round, c: Candidate, source: NodeLoad, usage: Resources, now: float) -> Move | None:
        """Prove a destination for ``c`` and plan the move, or note why it stays."""
        plan, probe, args = rnd.plan, rnd.probe, self.args
        thr = probe.thresholds
        plan.checks += 1
        if args.node_fit:
            proof = prove(probe, c.pod, c.usage, source.name, now)
        else:
            proof = _coolest(probe, c, source.name)
        if proof.destination is None:
            plan.skipped.append(Skip(c.key, source.name, f"no destination: {proof.why}"))
            return None
        dest = probe.loads[proof.destination]
        dest_before = dest.usage + probe.incoming(dest.name)
        prod = c.pod.priority_class == PriorityClass.PROD
        move = Move(c.key, workload_of(c.pod), source.name, dest.name, c.usage, prod, _reason(source, thr, usage),
                    _percents(source, usage, args.resources), _percents(source, usage - c.usage, args.resources),
                    _percents(dest, dest_before, args.resources),
                    _percents(dest, dest_before + c.usage, args.resources))
        plan.moves.append(move)
        rnd.per_node[source.name] += 1
        rnd.per_namespace[c.pod.namespace] += 1
        rnd.per_workload[move.workload] += 1
        rnd.probe = probe.moved(move.reservation(now, args.reservation_seconds), dest.name)
        return move


def _coolest(probe: Probe, c: Candidate, source: str) -> Proof:
    """With ``nodeFit: false``: the open node of least usage, without asking the scheduler whether the pod fits
    there (Koordinator's behaviour when the fit check is off); it still stays below its destination thresholds."""
    closed = closed_to(probe, source, c.usage, c.pod.priority_class == PriorityClass.PROD)
    open_loads = [ld for n, ld in probe.loads.items() if n not in closed]
    if not open_loads:
        return Proof(None, "no node below its destination thresholds")
    best = min(open_loads, key=lambda ld: sum(ld.percent(r) for r in probe.thresholds.high))
    return Proof(best.name, "")
