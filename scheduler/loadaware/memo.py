"""What one load-aware configuration derives from pods, nodes, NodeMetrics and WaterlinePolicies, kept from one
session to the next (see :mod:`scheduler.framework.memo`).

Every entry is keyed by the identity of the parsed objects it was computed from — the pod for its assigned-pod
entry, the node's annotations for its threshold profile, the NodeMetric plus the node's assigned-pod entries for
its existing-load rows, the policy objects and node views for the waterline caps — so an object the scheduler cache
replaced is recomputed, never served stale.  What depends on the session's time is dated anew: an assigned pod
without a PodScheduled time is stamped with ``now`` (its entry is kept with how to date it, :class:`Stamp`); metric
expiry is worked out every session.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
import numpy.typing as npt

from common.objects import NodeMetricView, NodeView, PodView
from common.qos import PriorityClass
from common.resources import Resources
from common.slots import slot_maker
from scheduler.framework.memo import SessionMemo, same_objects

from .args import LoadAwareArgs
from .cache import AssignedPod, MetricLoad, NodeEntries, Stamp, enters_cache, estimate_row, metric_load, stamped_entry
from .estimator import SCALING_FACTORS_ANNOTATION
from .profile import ThresholdProfile, effective_profile, plugin_profile

if TYPE_CHECKING:
    from .carried import CarriedNodes

__all__ = ["LoadAwareMemo", "NodeRows"]

IntArray = npt.NDArray[np.int64]
T = TypeVar("T")
_KEY = "loadaware"
# distinct pod shapes whose estimates are kept (all forgotten at once past it: workloads have a few shapes each)
ESTIMATE_SHAPES = 4096


@dataclass(frozen=True, slots=True)
class NodeRows:
    """A node's existing load as the filter and the score read it (zero rows where there is none): the filter's,
    the prod filter's and the score's rows one after the other, in Python ints (the session stacks every node's
    values into its matrices at once)."""

    has_status: bool
    values: tuple[int, ...]

    @classmethod
    def from_values(cls, has_status: bool, values: Sequence[int]) -> NodeRows:
        return cls(has_status, tuple(values))


@dataclass(frozen=True, slots=True)
class _RowsEntry:
    """A node's rows, computed at session time ``now`` from these objects."""

    metric: NodeMetricView
    profile: ThresholdProfile
    group: NodeEntries
    now: float
    rows: NodeRows
    recent: float | None   # the metric's update less its reporting interval (None: no update time)


@dataclass(frozen=True, slots=True)
class _NodePods:
    """What :meth:`LoadAwareMemo.node_entries` keeps per node: its pods, their entries (None: not in the cache) and
    how each is dated anew (None: it holds at any time), and the group of them."""

    pods: tuple[PodView, ...]
    entries: tuple[AssignedPod | None, ...]
    stamps: tuple[Stamp | None, ...]
    group: NodeEntries

    def by_id(self) -> dict[int, tuple[AssignedPod | None, Stamp | None]]:
        """Each pod's entry and stamp by the pod's id (valid while this holds the pods)."""
        return dict(zip(map(id, self.pods), zip(self.entries, self.stamps, strict=True), strict=True))


# _NodePods(...) made slot by slot (common.slots): one per node whose pods changed, every session
_make_node_pods = slot_maker(_NodePods)


def _dated_alike(group: NodeEntries, then: float, now: float, recent: float | None) -> bool:
    """Whether a node's rows read ``group``'s entries dated at ``now`` as they read them dated at ``then``: the
    dates only decide whether a pod's estimate counts, which it does at both times once both are past ``recent``,
    the metric's update less its reporting interval (an entry dated after that is estimated whatever its deadline;
    without an update time every estimate counts)."""
    if group.dated is None or then == now or recent is None:
        return True
    return then > recent and now > recent


class LoadAwareMemo:
    """One per scheduler and load-aware arguments; :meth:`of` starts afresh when the arguments change."""

    def __init__(self, memo: SessionMemo, args: LoadAwareArgs) -> None:
        self.args = args
        self.base_profile = plugin_profile(args)
        self._assigned = memo.table("loadaware.assigned")
        self._profiles = memo.table("loadaware.profile")
        self._policies = memo.table("loadaware.policy")
        self._node_allocatable = memo.table("loadaware.allocatable")
        self._estimates = memo.table("loadaware.estimate")
        for t in (self._assigned, self._profiles, self._policies, self._node_allocatable, self._estimates):
            t.clear()
        self._rows: dict[str, _RowsEntry] = {}
        # each NodeMetric's reading by name, with the object it was read from: kept while it is the same object, not
        # only while a session reads it (a node's rows are read again when a pod is placed on it, sessions apart)
        self._metric_loads: dict[str, tuple[NodeMetricView, MetricLoad]] = {}
        self._by_shape: dict[tuple[Resources, Resources, PriorityClass, str | None], IntArray] = {}
        self._node_entries: dict[str, _NodePods] = {}
        self._waterlines: tuple[tuple[object, ...], tuple[NodeView, ...], Any] | None = None
        self._allocatable: tuple[tuple[NodeView, ...], IntArray] | None = None
        self._thresholds: tuple[tuple[ThresholdProfile, ...], Any] | None = None
        # every node's state as the last session opened it (scheduler.loadaware.carried)
        self.carried_nodes: CarriedNodes | None = None

    @classmethod
    def of(cls, memo: SessionMemo, args: LoadAwareArgs) -> LoadAwareMemo:
        hit = memo.value(_KEY)
        if isinstance(hit, LoadAwareMemo) and hit.args == args:
            return hit
        fresh = cls(memo, args)
        memo.set_value(_KEY, fresh)
        return fresh

    def assigned(self, pod: PodView, now: float) -> AssignedPod | None:
        """The assigned-pod entry of a pod bound to ``pod.node_name``, or None when it does not enter the cache."""
        return self._assigned_kept(pod, now)[0]

    def _assigned_kept(self, pod: PodView, now: float) -> tuple[AssignedPod | None, bool]:
        """:meth:`assigned`, and whether the answer holds at any time (False: it is dated with ``now``, and a
        session at another time dates it anew from what is kept)."""
        entry, stamp = self._stamped(pod, now)
        return entry, stamp is None

    def _stamped(self, pod: PodView, now: float) -> tuple[AssignedPod | None, Stamp | None]:
        """:meth:`assigned`, and how to date it anew at another time (None: it holds at any time)."""
        hit: tuple[AssignedPod | None, Stamp | None] | None = self._assigned.get(pod)
        if hit is None:
            # the estimate is kept per pod shape: a bound pod's new object, or a replica, finds it
            made = (stamped_entry(pod, pod.node_name, now, self.args, self.estimate(pod, self._estimate_row))
                    if enters_cache(pod) else (None, None))
            hit = self._assigned.put(pod, made)
        entry, stamp = hit
        if entry is None or stamp is None:
            return entry, None
        if entry.timestamp != now:
            entry = stamp.apply(entry, now)
            self._assigned.put(pod, (entry, stamp))
        return entry, stamp

    def estimate(self, pod: PodView, compute: Callable[[PodView], IntArray]) -> IntArray:
        """``compute(pod)`` (the pod's estimated usage under these arguments), once per pod object, and once per
        what the estimate reads of a pod (requests, limits, priority class, the custom factors when allowed): the
        replicas of a workload share one."""
        hit: IntArray | None = self._estimates.get(pod)
        if hit is None:
            custom = pod.annotations.get(SCALING_FACTORS_ANNOTATION) if self.args.allow_customize_estimation else None
            shape = (pod.requests, pod.limits, pod.priority_class, custom)
            hit = self._by_shape.get(shape)
            if hit is None:
                if len(self._by_shape) >= ESTIMATE_SHAPES:
                    self._by_shape.clear()
                hit = self._by_shape[shape] = compute(pod)
            hit = self._estimates.put(pod, hit)
        return hit

    def _estimate_row(self, pod: PodView) -> IntArray:
        return estimate_row(pod, self.args)

    def metric(self, metric: NodeMetricView) -> MetricLoad:
        """``metric_load(metric)``, once per NodeMetric object."""
        hit = self._metric_loads.get(metric.name)
        if hit is not None and hit[0] is metric:
            return hit[1]
        load = metric_load(metric, self.args)
        self._metric_loads[metric.name] = (metric, load)
        return load

    def profile(self, annotations: Mapping[str, str]) -> ThresholdProfile:
        hit: ThresholdProfile | None = self._profiles.get(annotations)
        if hit is None:
            hit = self._profiles.put(annotations, effective_profile(self.args, annotations, self.base_profile))
        return hit

    def node_rows(self, node: str, metric: NodeMetricView, profile: ThresholdProfile, group: NodeEntries,
                  now: float) -> NodeRows | None:
        """The rows kept for ``node`` if they were computed from these very objects at a time that reads the
        group's dated entries alike (:func:`_dated_alike`)."""
        hit = self._rows.get(node)
        if hit is None or hit.metric is not metric or hit.profile is not profile or hit.group is not group:
            return None
        return hit.rows if _dated_alike(group, hit.now, now, hit.recent) else None

    def keep_rows(self, node: str, metric: NodeMetricView, profile: ThresholdProfile, group: NodeEntries,
                  now: float, rows: NodeRows) -> NodeRows:
        m = self.metric(metric)
        recent = None if m.update is None else m.update - m.interval
        self._rows[node] = _RowsEntry(metric, profile, group, now, rows, recent)
        return rows

    def for_profiles(self, profiles: Sequence[ThresholdProfile], compute: Callable[[], T]) -> T:
        """``compute()`` (something derived from the nodes' threshold profiles), kept while they are the same."""
        hit = self._thresholds
        if hit is None or not same_objects(hit[0], profiles):
            hit = self._thresholds = (tuple(profiles), compute())
        value: T = hit[1]
        return value

    def node_entries(self, node: str, pods: Sequence[PodView], now: float) -> NodeEntries:
        """The entries of the pods on ``node`` (those entering the cache), kept while they are the same pod
        objects, whatever the session time: those dated with it are dated anew by the cache that reads them
        (:meth:`NodeEntries.at`).  When some pods changed, the others' entries are taken over, dated at ``now``."""
        hit = self._node_entries.get(node)
        if hit is not None and same_objects(hit.pods, pods):
            return hit.group
        # the previous pods are still held by `hit`, so their ids cannot belong to another object
        before = hit.by_id() if hit is not None else {}
        entries: list[AssignedPod | None] = []
        stamps: list[Stamp | None] = []
        kept: list[AssignedPod] = []         # the entries of the pods entering the cache, and their stamps
        kept_stamps: list[Stamp | None] = []
        dated: float | None = None
        for pod in pods:
            got = before.get(id(pod))
            if got is None:
                entry, stamp = self._stamped(pod, now)
            else:
                entry, stamp = got
                if stamp is not None and entry is not None and entry.timestamp != now:
                    entry = stamp.apply(entry, now)
            entries.append(entry)
            stamps.append(stamp)
            if entry is not None:
                kept.append(entry)
                kept_stamps.append(stamp)
                if stamp is not None:
                    dated = now
        group = NodeEntries.of(node, kept, kept_stamps, dated)
        self._node_entries[node] = _make_node_pods(tuple(pods), tuple(entries), tuple(stamps), group)
        return group

    def entries(self, pods: Iterable[PodView], now: float) -> list[AssignedPod]:
        """:meth:`assigned` of every pod that enters the cache, in order."""
        out: list[AssignedPod] = []
        for pod in pods:
            entry = self._assigned_kept(pod, now)[0]
            if entry is not None:
                out.append(entry)
        return out

    def forget_nodes_except(self, names: Sequence[str]) -> None:
        """Drop the rows, entries and NodeMetric readings of nodes no longer in the session."""
        if len(self._rows) > len(names):
            keep = set(names)
            self._rows = {k: v for k, v in self._rows.items() if k in keep}
        if len(self._node_entries) > len(names):
            keep = set(names)
            self._node_entries = {k: v for k, v in self._node_entries.items() if k in keep}
        if len(self._metric_loads) > len(names):
            keep = set(names)
            self._metric_loads = {k: v for k, v in self._metric_loads.items() if k in keep}

    def parsed_policy(self, raw: object, parse: Callable[[object], object | None]) -> object | None:
        """``parse(raw)`` (None when invalid), once per policy object."""
        hit: tuple[object | None] | None = self._policies.get(raw)
        if hit is None:
            hit = self._policies.put(raw, (parse(raw),))
        return hit[0]

    def allocatable(self, nodes: Sequence[NodeView], row: Callable[[NodeView], Sequence[int]]) -> IntArray:
        """The nodes' estimated allocatable matrix (``row(node)`` per node, kept per node object, and the matrix
        while the nodes are the same objects); a copy, so the caller may change it."""
        hit = self._allocatable
        if hit is None or not same_objects(hit[0], nodes):
            rows: list[Sequence[int]] = []
            for node in nodes:
                got: Sequence[int] | None = self._node_allocatable.get(node)
                if got is None:
                    got = self._node_allocatable.put(node, row(node))
                rows.append(got)
            matrix = np.array(rows, dtype=np.int64).reshape(len(nodes), len(self.args.resource_names))
            hit = self._allocatable = (tuple(nodes), matrix)
        return hit[1].copy()

    def waterlines(self, policies: Sequence[object], nodes: Sequence[NodeView], compute: Callable[[], Any]) -> Any:
        """``compute()`` (the waterline caps of ``nodes`` under ``policies``), kept while both are the same objects."""
        hit = self._waterlines
        if hit is not None and same_objects(hit[0], policies) and same_objects(hit[1], nodes):
            return hit[2]
        value = compute()
        self._waterlines = (tuple(policies), tuple(nodes), value)
        return value
