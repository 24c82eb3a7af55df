"""loadaware: Koordinator's LoadAwareScheduling on our session (docs/design/loadaware.md): filter nodes whose real
usage plus the estimated usage of pods placed but not yet in metrics would exceed the thresholds, and score nodes
by their remaining real capacity.  Allocations made in this session are reserved in the plugin's assigned-pod
cache at once, so several pods placed in one session see each other.

Waterline-aware filtering (``respectWaterlines``, default on): the agent evicts or throttles pods once a node's
usage crosses a WaterlinePolicy waterline, so placing a pod that lifts the node above it only starts an evict →
reschedule loop.  The effective threshold of a node is therefore also capped at the lowest eviction/throttle
waterline of the policies that select it, minus ``waterlineMargin``.  The session gets the policies as
``Snapshot.extra["waterline_policies"]`` (WaterlinePolicy views or the raw objects; invalid ones are skipped as the
agent skips them) or ready-made percents as ``Snapshot.extra["waterline_percent"]``; which rule set each node's
cap is kept in :attr:`LoadAware.waterline_sources` for ``explain``.

Starvation relief (``relaxAfterSeconds``, default 0 = off): a pod that has been pending at least that long (since
its creation) is no longer filtered on usage, only scored, so it goes wherever the other plugins (resource fit
first) accept it, still preferring the coolest of those nodes.  Load-awareness then delays a pod by at most the
bound; without it a pod that fits only on warm nodes can wait out a whole peak (docs/configure.md).

Pressure filtering (``cpuPressureThreshold``, off by default): nodes whose reported CPU pressure is above
the threshold are filtered out as well (:mod:`scheduler.loadaware.pressure`).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import chain
from typing import Any

import numpy as np
import numpy.typing as npt

from common.config import ConfigError
from common.objects import NodeView, PodView
from common.qos import PriorityClass
from common.reservation import RESERVATIONS_ANNOTATION, active, parse_reservations, workload_of
from common.resources import CPU, MEMORY
from common.waterline import WaterlinePolicy
from scheduler.framework.api import TaskInfo, TaskStatus
from scheduler.framework.arrays import carried_row_caches
from scheduler.framework.plugin import Arguments, register_plugin
from scheduler.framework.runs import RowFn
from scheduler.framework.session import EventHandler, Session
from scheduler.framework.status import Code, FilterResult
from scheduler.loadaware.args import parse_loadaware_args
from scheduler.loadaware.cache import AssignedPod, assigned_pod, estimate_row
from scheduler.loadaware.carried import PodLog, open_carried
from scheduler.loadaware.evaluate import LoadAwareState, LoadFilter
from scheduler.loadaware.memo import LoadAwareMemo
from scheduler.loadaware.pressure import PressureFilter
from scheduler.loadaware.snapshot import open_state

__all__ = ["LoadAware", "WATERLINE_PERCENT_KEY", "WATERLINE_POLICIES_KEY", "WaterlineSource", "waterline_percents"]

NAME = "loadaware"
# the argument keys this plugin reads (a nested key as parent/child); tests hold the code and docs to it
ARGUMENTS: tuple[str, ...] = (
    "filterExpiredNodeMetrics", "nodeMetricExpirationSeconds", "enableScheduleWhenNodeMetricsExpired",
    "resourceWeights", "dominantResourceWeight", "usageThresholds", "prodUsageThresholds", "prodUsageIncludeSys",
    "scoreAccordingProdUsage", "estimator", "estimatedScalingFactors", "estimatedSecondsAfterPodScheduled",
    "estimatedSecondsAfterInitialized", "allowCustomizeEstimation", "aggregated/usageThresholds",
    "aggregated/usageAggregationType", "aggregated/usageAggregatedDuration", "aggregated/scoreAggregationType",
    "aggregated/scoreAggregatedDuration", "supportedResources", "respectWaterlines", "waterlineMargin",
    "relaxAfterSeconds",
    "cpuPressureThreshold",
)
# Snapshot.extra key: int64 [nodes, len(args.resource_names)] waterline percents from the nodes' active policies
WATERLINE_PERCENT_KEY = "waterline_percent"
# Snapshot.extra key: the WaterlinePolicy objects in force (views or raw dicts)
WATERLINE_POLICIES_KEY = "waterline_policies"
IntArray = npt.NDArray[np.int64]
# statuses of a node's tasks that are not (yet) assigned pods of the node: placed by this session only
_NOT_ASSIGNED = frozenset({TaskStatus.PIPELINED, TaskStatus.ALLOCATED})
# waterline metric -> (resource, whether the value is already a percent); usage values are in the agent's units
# (cpu millicores, memory bytes) and become a percent of the node's capacity
_WATERLINE_METRICS = {"cpu_total_utilization": (CPU, True), "memory_total_utilization": (MEMORY, True),
                      "cpu_total_usage": (CPU, False), "memory_total_usage": (MEMORY, False)}


@dataclass(frozen=True, slots=True)
class WaterlineSource:
    """The waterline that caps one node's threshold for one resource (before the margin)."""

    policy: str
    rule: str
    metric: str
    percent: int


def _parse_policy(item: object) -> WaterlinePolicy | None:
    if not isinstance(item, Mapping):
        return None
    try:
        return WaterlinePolicy.parse(item)
    except (ConfigError, ValueError):
        return None


def _policies(raw: Any, memo: LoadAwareMemo | None = None) -> list[WaterlinePolicy]:
    out: list[WaterlinePolicy] = []
    if not isinstance(raw, Iterable) or isinstance(raw, str | bytes | Mapping):
        return out
    for item in raw:
        if isinstance(item, WaterlinePolicy):
            out.append(item)
        elif isinstance(item, Mapping):
            parsed = _parse_policy(item) if memo is None else memo.parsed_policy(item, _parse_policy)
            if isinstance(parsed, WaterlinePolicy):
                out.append(parsed)
    return out


def waterline_percents(policies: Iterable[WaterlinePolicy], nodes: Sequence[NodeView],
                       resource_names: Sequence[str]) -> tuple[IntArray, list[dict[str, WaterlineSource]]]:
    """Per node and resource the lowest eviction/throttle waterline (whole percent, rounded down; 0 = none) of the
    policies selecting the node, and where each came from.  Preview rules and rules that only disable scheduling
    never evict or throttle, so they set no cap."""
    col = {r: j for j, r in enumerate(resource_names)}
    out = np.zeros((len(nodes), len(resource_names)), dtype=np.int64)
    sources: list[dict[str, WaterlineSource]] = [{} for _ in nodes]
    rules = [(p, r) for p in policies for r in p.rules
             if not r.preview and (r.action.throttle is not None or r.action.eviction is not None)
             and r.metric.name in _WATERLINE_METRICS]
    for i, node in enumerate(nodes):
        for policy, rule in rules:
            if not policy.applies_to(node.labels):
                continue
            resource, is_percent = _WATERLINE_METRICS[rule.metric.name]
            j = col.get(resource)
            if j is None:
                continue
            if is_percent:
                pct = rule.metric.value
            else:
                cap = node.capacity.get(resource, 0)
                if cap <= 0:
                    continue
                pct = rule.metric.value * 100 / cap
            whole = max(math.floor(pct), 1)
            if out[i, j] == 0 or whole < out[i, j]:
                out[i, j] = whole
                sources[i][resource] = WaterlineSource(policy.name, rule.name, rule.metric.name, whole)
    return out, sources


class LoadAware:
    name = NAME

    def __init__(self, args: Arguments) -> None:
        self.args = parse_loadaware_args(args, source=f"plugin {NAME} arguments")
        self.weight = args.score_weight()
        self.state: LoadAwareState | None = None
        self._estimates: dict[str, IntArray] = {}
        self._memo: LoadAwareMemo | None = None
        self.waterline_sources: list[dict[str, WaterlineSource]] = []

    def estimate(self, task: TaskInfo) -> IntArray:
        """The pod's estimated usage vector (read-only), once per task uid in a session; a pod object an earlier
        session estimated is not estimated again."""
        est = self._estimates.get(task.uid)
        if est is None:
            memo = self._memo
            est = memo.estimate(task.pod, self._estimate) if memo is not None else self._estimate(task.pod)
            self._estimates[task.uid] = est
        return est

    def _estimate(self, pod: PodView) -> IntArray:
        return estimate_row(pod, self.args)

    def on_session_open(self, ssn: Session) -> None:
        extra: Any = ssn.snapshot.extra.get(WATERLINE_PERCENT_KEY)
        percent = extra if isinstance(extra, np.ndarray) else None
        self.waterline_sources = []
        memo = self._memo = LoadAwareMemo.of(ssn.memo, self.args)
        views = ssn.node_views()
        if percent is None and self.args.respect_waterlines:
            policies = _policies(ssn.snapshot.extra.get(WATERLINE_POLICIES_KEY), memo)
            if policies:
                percent, sources = memo.waterlines(
                    policies, views, lambda: waterline_percents(policies, views, self.args.resource_names))
                self.waterline_sources = list(sources)
        # the memo's shared tuple of the views: the carried state keeps it, and finds it again by identity
        state = self._open_state(ssn, ssn.memo.shared_tuple(views), memo, percent)
        carried = memo.carried_nodes
        # only the nodes with a reservations annotation can hold a reservation (the carried state knows them)
        reserving = views if carried is None else [views[i] for i in carried.reserving]
        own = self._reserve_rebalanced(state, reserving, ssn.now)
        self.state = state

        pressure = (PressureFilter.build(self.args.cpu_pressure_threshold, views, ssn.snapshot.node_metrics)
                    if self.args.cpu_pressure_threshold else None)
        # rows change only when a pod is placed on or removed from a node, which the node arrays log; carried from
        # the previous session, they recompute the nodes whose rows of the state differ (their NodeMetric, pods,
        # freshness against the session's time, thresholds, waterline caps, reservations); the estimates they are
        # kept by follow from the pods and the arguments, which must be the same
        (filters, rows), changed = carried_row_caches(ssn.memo, NAME, ssn.arrays, self.args, state.row_inputs(),
                                                      2, renewing=ssn.renewing)

        relax_after = self.args.relax_after_seconds

        def predicate(task: TaskInfo) -> FilterResult:
            created = task.pod.creation_time
            if relax_after and created is not None and ssn.now - created >= relax_after:
                return FilterResult(np.ones(len(ssn.nodes), dtype=bool))
            est = self.estimate(task)
            is_prod = task.pod.priority_class == PriorityClass.PROD
            entries = own.get(workload_of(task.pod)) if own else None
            if task.pod.is_daemonset or entries:  # a daemon pod, or a moved pod's replacement: past the row memo
                with _released(state, entries):  # the replacement does not see its own reservation
                    res = state.filter(est, is_prod=is_prod, is_daemonset=task.pod.is_daemonset)
                return FilterResult(res.mask, lazy=lambda i: [(Code.UNSCHEDULABLE, state.reason(res, i))])
            # read without a copy: the reasons are asked for (fit errors, explain, preemption) before the next pod
            # is filtered, which is when the cache may update these values in place
            packed = filters.read((est.tobytes(), is_prod), lambda rows: state.filter_packed(est, is_prod=is_prod,
                                                                                             rows=rows))

            unpacked: list[LoadFilter] = []   # made when the first reason is asked for

            def reasons(i: int) -> list[tuple[Code, str]]:
                if not unpacked:
                    unpacked.append(state.unpacked(packed, is_prod=is_prod))
                return [(Code.UNSCHEDULABLE, state.reason(unpacked[0], i))]
            return FilterResult(packed == 0, lazy=reasons)

        def with_pressure(task: TaskInfo) -> FilterResult:
            """The load filter, then the CPU-pressure filter (only with cpuPressureThreshold set); a pod past
            relaxAfterSeconds is relieved of both."""
            res = predicate(task)
            created = task.pod.creation_time
            if pressure is None or (relax_after and created is not None and ssn.now - created >= relax_after):
                return res
            return FilterResult(res.passed & pressure.passed, lazy=lambda i: res.found(i) if not res.passed[i]
                                else [(Code.UNSCHEDULABLE, pressure.reason(i))])

        def score(task: TaskInfo) -> IntArray:
            est = self.estimate(task)
            is_prod = task.pod.priority_class == PriorityClass.PROD
            entries = own.get(workload_of(task.pod)) if own else None
            if entries:  # the replacement of a moved pod: scored without its own reservation, past the row memo
                with _released(state, entries):
                    mine: IntArray = state.score(est, is_prod=is_prod) * self.weight
                return mine
            # read at once: score_nodes adds the scores into the total, explain copies them
            raw = rows.read((est.tobytes(), is_prod), lambda rows: state.score(est, is_prod=is_prod, rows=rows))
            out: IntArray = raw if self.weight == 1 else raw * self.weight
            return out

        def on_allocate(task: TaskInfo) -> None:
            if task.node_name:
                # the estimate kept per pod shape
                state.reserve(assigned_pod(task.pod, task.node_name, ssn.now, self.args, self.estimate(task)))
                if own:  # a replacement placed where its reservation was: its own estimate counts from now on
                    _consume(state, own, workload_of(task.pod), task.node_name)

        def on_deallocate(task: TaskInfo) -> None:
            state.unreserve(task.pod.key)

        def filter_rows(task: TaskInfo) -> RowFn | None:
            """The filter on some nodes (each node's rows are its own, refreshed as pods are placed on it); not for a
            pod the filter treats apart (a daemon pod, a moved pod's replacement, one that may be relieved) nor
            with the pressure filter."""
            if pressure is not None or relax_after or own or task.pod.is_daemonset:
                return None
            est = self.estimate(task)
            is_prod = task.pod.priority_class == PriorityClass.PROD
            return state.passes_rows_of(est, is_prod=is_prod)

        def score_rows(task: TaskInfo) -> RowFn | None:
            if own:
                return None
            est = self.estimate(task)
            is_prod = task.pod.priority_class == PriorityClass.PROD
            return state.score_rows_of(est, is_prod=is_prod, weight=self.weight)

        def rows_key(task: TaskInfo) -> Hashable:
            """What the rows read of the pod besides its spec, annotations and owners: its estimate and priority
            class (which a label may set)."""
            return self.estimate(task).tobytes(), task.pod.priority_class

        def rows_moved(task: TaskInfo) -> bool:
            """A placement reserves on its node alone, but for a moved pod's replacement taking its reservation."""
            return bool(own)

        def rows_since(views_moved: bool) -> IntArray | None:
            """The rows read the state's per-node inputs (those the row caches are carried by), the arguments and
            the pod's estimate: since the previous session, the nodes whose inputs differ as the sessions open."""
            return changed

        ssn.add_vector_predicate_fn(NAME, predicate if pressure is None else with_pressure, rows=filter_rows,
                                    rows_key=rows_key, rows_moved=rows_moved, rows_since=rows_since)
        ssn.add_vector_score_fn(NAME, score, rows=score_rows, rows_key=rows_key, rows_moved=rows_moved,
                                rows_since=rows_since)
        ssn.add_event_handler(EventHandler(on_allocate, on_deallocate))
        if own:
            ssn.add_best_node_fn(NAME, lambda task, scores: _reserved_node(own, task, scores))

    def _open_state(self, ssn: Session, views: Sequence[NodeView], memo: LoadAwareMemo,
                    percent: IntArray | None) -> LoadAwareState:
        """The session's state: from what the previous session left, deriving anew only the nodes whose objects
        changed (:mod:`scheduler.loadaware.carried`), or from every node's pods when that cannot be carried."""
        def pods_on(i: int) -> list[PodView]:
            return [t.pod for t in ssn.nodes[i].tasks.values() if t.status not in _NOT_ASSIGNED]

        snap = ssn.snapshot
        metrics = snap.node_metrics
        log = (PodLog(snap.changes, snap.generation, snap.pod_by_key)
               if snap.changes is not None and snap.pod_by_key is not None else None)
        state = open_carried(self.args, memo, views, snap.pods, pods_on, metrics, ssn.now, percent, log)
        if state is not None:
            return state
        by_node = [pods_on(i) for i in range(len(ssn.nodes))]
        # the pods, flattened only if open_state reads them one by one (it reads them node by node here)
        return open_state(self.args, views, chain.from_iterable(by_node), metrics, ssn.now, percent, memo, by_node)

    def _reserve_rebalanced(self, state: LoadAwareState, views: Sequence[NodeView],
                            now: float) -> dict[str, list[AssignedPod]]:
        """Count the usage the rebalancer is moving to a node (its unexpired reservations, ``common.reservation``)
        as load of that node, so other pods do not fill a destination before the moved pod arrives; returns the
        entries by workload, which a pod of that workload does not see.  A malformed annotation reserves nothing:
        the node is then judged on its metrics alone, as without a rebalancer."""
        names = self.args.resource_names
        own: dict[str, list[AssignedPod]] = {}
        for node in views:
            if not node.annotations.get(RESERVATIONS_ANNOTATION):   # no reservation (parse_reservations: none)
                continue
            try:
                entries = active(parse_reservations(node.annotations, node=node.name), now)
            except ValueError:
                continue
            for r in entries:
                entry = AssignedPod(f"rebalance:{node.name}:{r.pod}", node.name,
                                    tuple(r.usage.get(n, 0) for n in names), r.prod, r.since, r.until)
                state.reserve(entry)
                own.setdefault(r.workload, []).append(entry)
        return own

    def on_session_close(self, ssn: Session) -> None:
        self.state = None


@contextmanager
def _released(state: LoadAwareState, entries: Sequence[AssignedPod] | None) -> Iterator[None]:
    """The rebalancer's reservations ``entries`` left out of ``state`` for the duration of the block."""
    for e in entries or ():
        state.unreserve(e.key)
    try:
        yield
    finally:
        for e in entries or ():
            state.reserve(e)


def _consume(state: LoadAwareState, own: dict[str, list[AssignedPod]], workload: str, node: str) -> None:
    """Drop ``workload``'s reservation on ``node`` (one: one replacement takes one reservation's place)."""
    entries = own.get(workload) or []
    for i, e in enumerate(entries):
        if e.node == node:
            state.unreserve(e.key)
            del entries[i]
            return


def _reserved_node(own: Mapping[str, Sequence[AssignedPod]], task: TaskInfo, scores: Mapping[str, float]) -> str | None:
    """A moved pod's replacement goes to the node reserved for its workload when that node is among the candidates
    (it passed every filter); else the scores decide.  Koordinator's Reservation steers the same way: the owner
    matched pod prefers the reserved node and consumes the reservation (docs/design/rebalance.md §4)."""
    for e in own.get(workload_of(task.pod)) or ():
        if e.node in scores:
            return e.node
    return None


@register_plugin(NAME)
def _build(args: Arguments) -> LoadAware:
    return LoadAware(args)
