"""A load-aware session opened from the state the session before it left (docs/design/loadaware.md §4, §5).

The per-node state a session opens with — each node's assigned-pod entries, threshold profile, estimated
allocatable and existing-load rows — depends on that node's objects only: its view, its NodeMetric, the pods bound
to it, and the session's time.  :class:`CarriedNodes` keeps it for every node, with the objects it came from, so
the next session redoes only the nodes where one of them is another object: the pods the scheduler cache's change
log names since (:class:`PodLog`; without one, the snapshot's pods compared as a set of ids), the node views and
NodeMetrics compared position by position in C loops (the NodeMetrics not even looked up when the log names none),
and the nodes whose rows the new session time reads differently (vectorised).  A kept value is never changed: the next
session's values are new arrays and dicts, so a session still reading the old ones is not disturbed.

When the pods' entries cannot be held one per key (a pod key on two nodes, or twice on one: a broken snapshot),
nothing is carried and the caller opens the state from scratch (:func:`scheduler.loadaware.snapshot.open_state`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Container, Mapping, Sequence
from dataclasses import dataclass
from itertools import compress
from operator import attrgetter, is_not
from typing import TypeVar

import numpy as np
import numpy.typing as npt

from common.objects import NodeMetricView, NodeView, PodView
from common.reservation import RESERVATIONS_ANNOTATION
from scheduler.framework.changes import ChangeLog, Changes
from scheduler.framework.memo import same_objects

from .args import LoadAwareArgs
from .cache import AssignedPodCache, NodeEntries, load_rows
from .evaluate import LoadAwareState, row_aggregations, threshold_matrices
from .memo import LoadAwareMemo
from .profile import ThresholdProfile
from .snapshot import allocatable_row

__all__ = ["CarriedNodes", "PodLog", "carry_nodes", "open_carried"]

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]
FloatArray = npt.NDArray[np.float64]
_Thresholds = tuple[IntArray, IntArray, BoolArray, BoolArray]
_NAME = attrgetter("name")
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class CarriedNodes:
    """Every node's load-aware state as one session opened it, with the objects it was derived from (by
    position, in node order).  Never changed once made; the arrays are read-only."""

    views: tuple[NodeView, ...]
    names: tuple[str, ...]
    index: Mapping[str, int]
    pods: Mapping[int, PodView] | None           # the session's pods by id (held: no id is reused meanwhile)
    metrics: tuple[NodeMetricView | None, ...]
    has_metric: BoolArray
    profiles: tuple[ThresholdProfile, ...]
    thresholds: _Thresholds
    allocatable: IntArray
    groups: Mapping[str, NodeEntries]            # each node's assigned-pod entries, by node name
    node_of: Mapping[str, str]                   # pod key -> node, over every group
    has_status: BoolArray
    rows: IntArray                               # [n, 3k]: the filter's, prod's and score's rows side by side
    update: FloatArray                           # each NodeMetric's update time (NaN: none, or no NodeMetric)
    then: FloatArray                             # the session time each node's rows were computed at
    recent: FloatArray                           # its NodeMetric's update less the reporting interval (NaN: none)
    dated: BoolArray                             # whether its rows read entries dated with the session time
    reserving: tuple[int, ...]                   # the nodes whose view has a rebalancer reservations annotation
    log: PodLog | None                           # the cache's change log and generation the state follows


@dataclass(frozen=True, slots=True)
class PodLog:
    """A scheduler cache's change log, the generation a snapshot shows, and the snapshot's pods by key: the pods
    that changed between two snapshots are then the keys the log names, without comparing every pod."""

    changes: ChangeLog
    generation: int
    by_key: Mapping[str, PodView]


def _stale(kept: CarriedNodes, now: float) -> BoolArray:
    """Nodes whose kept rows a session at ``now`` reads differently: entries dated with the session's time count
    their estimate while the time is past ``recent``; rows made and read both past it (or at the same time, or
    against a metric without an update time) are the same."""
    then, recent = kept.then, kept.recent
    with np.errstate(invalid="ignore"):
        alike = (then == now) | np.isnan(recent) | ((then > recent) & (now > recent))
    stale: BoolArray = kept.dated & ~alike
    return stale


def _moved_by_ids(kept: CarriedNodes, before: Mapping[int, PodView], pods: Mapping[int, PodView]) -> set[int]:
    """The nodes that gained or lost a pod object: the nodes the pods added or removed name."""
    moved: set[int] = set()
    index = kept.index
    for key in pods.keys() - before.keys():
        i = index.get(pods[key].node_name)
        if i is not None:
            moved.add(i)
    for key in before.keys() - pods.keys():
        i = index.get(before[key].node_name)
        if i is not None:
            moved.add(i)
    return moved


def _logged(kept: CarriedNodes, log: PodLog) -> Changes | None:
    """What the log names since the kept state's generation; None when it does not reach back or is another
    cache's."""
    if kept.log is None or kept.log.changes is not log.changes:
        return None
    return log.changes.between(kept.log.generation, log.generation)


def _moved_by_log(kept: CarriedNodes, log: PodLog, changes: Changes) -> set[int]:
    """The nodes whose pods changed, from the pod keys the log names since the kept state's generation
    (``changes``): the node each such pod is bound to now and the node its kept entry was on (a pod without an
    entry added nothing to its node's)."""
    moved: set[int] = set()
    index, node_of, by_key = kept.index, kept.node_of, log.by_key
    for key in changes.get("Pod", {}):
        pod = by_key.get(key)
        for name in (node_of.get(key), None if pod is None else pod.node_name):
            i = index.get(name) if name else None
            if i is not None:
                moved.add(i)
    return moved


def _changed(kept: CarriedNodes, views: Sequence[NodeView], metrics: Sequence[NodeMetricView | None],
             now: float, moved: set[int]) -> list[int]:
    """The positions of the nodes whose state must be derived anew (same node names, in the same order): those
    whose pods changed (``moved``), view or NodeMetric is another object, or rows the time reads differently.
    The kept sequences themselves (no node view or NodeMetric changed) are not compared entry by entry."""
    n = len(views)
    out = set() if views is kept.views else set(compress(range(n), map(is_not, views, kept.views)))
    if metrics is not kept.metrics:
        out.update(compress(range(n), map(is_not, metrics, kept.metrics)))
    out.update(np.flatnonzero(_stale(kept, now)).tolist())
    return sorted(out | moved)


@dataclass(slots=True)
class _Derived:
    """The nodes derived with a NodeMetric, by position, and the values each gets (lists in the same order)."""

    at: list[int]
    has_status: list[bool]
    rows: list[list[int]]
    dated: list[bool]
    recent: list[float]
    update: list[float]


class _Update:
    """The next :class:`CarriedNodes`, made from the kept one (or from nothing) node by node."""

    def __init__(self, args: LoadAwareArgs, memo: LoadAwareMemo, views: Sequence[NodeView],
                 kept: CarriedNodes | None) -> None:
        self.args, self.memo = args, memo
        n, k = len(views), len(args.resource_names)
        self.fresh = kept is None   # every node is derived, none from what was kept
        self.views: Sequence[NodeView | None] = kept.views if kept else [None] * n
        self.profiles: list[ThresholdProfile] = list(kept.profiles) if kept else [memo.base_profile] * n
        self.groups = dict(kept.groups) if kept else {}
        self.node_of = dict(kept.node_of) if kept else {}
        self.total = len(self.node_of)
        self.reserving = set(kept.reserving) if kept else set()
        self.irregular = False
        if kept is not None:
            plain, prod, prod_enabled, agg_used = kept.thresholds
            self.thresholds = (plain.copy(), prod.copy(), prod_enabled.copy(), agg_used.copy())
            self.allocatable = kept.allocatable.copy()
            self.has_status, self.rows = kept.has_status.copy(), kept.rows.copy()
            self.has_metric = kept.has_metric.copy()
            self.update, self.then = kept.update.copy(), kept.then.copy()
            self.recent, self.dated = kept.recent.copy(), kept.dated.copy()
        else:
            self.thresholds = (np.zeros((n, k), dtype=np.int64), np.zeros((n, k), dtype=np.int64),
                               np.zeros(n, dtype=np.bool_), np.zeros(n, dtype=np.bool_))
            self.allocatable = np.zeros((n, k), dtype=np.int64)
            self.has_status, self.rows = np.zeros(n, dtype=np.bool_), np.zeros((n, 3 * k), dtype=np.int64)
            self.has_metric = np.zeros(n, dtype=np.bool_)
            self.update, self.then = np.full(n, np.nan), np.zeros(n)
            self.recent, self.dated = np.full(n, np.nan), np.zeros(n, dtype=np.bool_)
        # the nodes derived without a NodeMetric, and with one (position, then its values): written together
        self.bare: list[int] = []
        self.derived = _Derived([], [], [], [], [], [])

    def node(self, i: int, view: NodeView, metric: NodeMetricView | None, pods: Sequence[PodView] | None,
             now: float) -> None:
        """Derive node ``i``'s state anew from its view, NodeMetric and pods (None: the same pods as before, whose
        entries are kept)."""
        memo, names = self.memo, self.args.resource_names
        # the same view has the same annotations: its profile is the kept one (the memo may have dropped it)
        profile = self.profiles[i] if view is self.views[i] else memo.profile(view.annotations)
        if self.fresh or profile is not self.profiles[i]:
            self.profiles[i] = profile
            for mine, one in zip(self.thresholds, threshold_matrices([profile], names), strict=True):
                mine[i] = one[0]
        if view is not self.views[i]:
            self.allocatable[i] = allocatable_row(view, names)
            if view.annotations.get(RESERVATIONS_ANNOTATION):
                self.reserving.add(i)
            else:
                self.reserving.discard(i)
        if pods is not None:
            self._group(view.name, memo.node_entries(view.name, pods, now))
        if metric is None:
            self.bare.append(i)
            return
        group = self.groups[view.name]
        m = memo.metric(metric)
        plain, score = row_aggregations(self.args, profile)
        has_status, rows = load_rows(m, group.at(now), len(names), plain, score)
        d = self.derived
        d.at.append(i)
        d.has_status.append(has_status)
        d.rows.append(rows)
        d.dated.append(group.dated is not None)
        d.recent.append(math.nan if m.update is None else m.update - m.interval)
        d.update.append(math.nan if metric.update_time is None else metric.update_time)

    def write_derived(self, now: float) -> None:
        """The values of the nodes derived since, written into the arrays (a few NumPy calls, not one per node)."""
        if self.bare:
            at = self.bare
            self.has_metric[at] = self.has_status[at] = self.dated[at] = False
            self.rows[at] = 0
            self.update[at] = np.nan
            self.bare = []
        d = self.derived
        if d.at:
            at = d.at
            self.has_metric[at] = True
            self.has_status[at] = d.has_status
            self.rows[at] = d.rows
            self.then[at] = now
            self.dated[at] = d.dated
            self.recent[at] = d.recent
            self.update[at] = d.update
            self.derived = _Derived([], [], [], [], [], [])

    def _group(self, name: str, group: NodeEntries) -> None:
        """Node ``name``'s entries are ``group``'s.  A pod key the new group holds too is not deleted from
        ``node_of`` but set again: a map with deleted entries is copied entry by entry, one without them in one
        block, and each session copies it (11,000 keys at steady state: a millisecond against a tenth)."""
        old = self.groups.get(name)
        if old is group:
            return
        if old is not None:
            self.total -= len(old.entries)
            kept = group.node_of
            for key in old.by_key:
                if key not in kept and self.node_of.get(key) == name:
                    del self.node_of[key]
        self.groups[name] = group
        self.total += len(group.entries)
        self.node_of.update(group.node_of)
        if group.entries and not group.by_key:
            self.irregular = True

    def done(self, views: Sequence[NodeView], names: tuple[str, ...], index: Mapping[str, int],
             pods: Mapping[int, PodView] | None, metrics: Sequence[NodeMetricView | None],
             log: PodLog | None) -> CarriedNodes | None:
        """The new state, or None when its entries are not one per pod key."""
        if self.irregular or self.total != len(self.node_of):
            return None
        arrays = (*self.thresholds, self.allocatable, self.has_metric, self.has_status, self.rows, self.update, self.then,
                  self.recent, self.dated)
        for a in arrays:
            a.flags.writeable = False
        return CarriedNodes(_as_tuple(views), names, index, pods, _as_tuple(metrics), self.has_metric,
                            tuple(self.profiles),
                            self.thresholds, self.allocatable, self.groups, self.node_of,
                            self.has_status, self.rows, self.update, self.then, self.recent, self.dated,
                            tuple(sorted(self.reserving)), log)


def _as_tuple(items: Sequence[T]) -> tuple[T, ...]:
    """``items`` as a tuple, the very one when it is one (the kept views and NodeMetrics: no copy of 5,000)."""
    return items if isinstance(items, tuple) else tuple(items)


def carry_nodes(args: LoadAwareArgs, memo: LoadAwareMemo, views: Sequence[NodeView], pods: Sequence[PodView],
                pods_on: Callable[[int], Sequence[PodView]], metrics: Mapping[str, NodeMetricView],
                now: float, log: PodLog | None = None) -> CarriedNodes | None:
    """The nodes' state at ``now``, from what ``memo`` carried (kept there for the next session); ``pods_on(i)``:
    the pods bound to node ``i`` as the session counts them, asked only for the nodes whose pods changed, which
    ``log`` names when the state follows it, else a comparison of every pod object finds.  None (and nothing
    kept) when the state cannot be carried (see the module's docstring)."""
    kept = memo.carried_nodes
    # the very node views of the kept state have its names (compared by identity: no view is read), and are then
    # taken as the kept sequence
    if kept is not None and same_objects(views, kept.views):
        views, names = kept.views, kept.names
    else:
        names = tuple(map(_NAME, views))
    if kept is not None and kept.names != names:
        kept = None
    changes = None if kept is None or log is None else _logged(kept, log)
    moved = None if kept is None or log is None or changes is None else _moved_by_log(kept, log, changes)
    on_node: Sequence[NodeMetricView | None]
    if kept is not None and changes is not None and "NodeMetric" not in changes:
        on_node = kept.metrics   # no NodeMetric changed since (the log names every one): each node's is kept
    else:
        on_node = tuple(map(metrics.get, names))
    # the pods by id, to compare the next session's with, when no log is followed
    by_id = None if moved is not None or log is not None else dict(zip(map(id, pods), pods, strict=True))
    if moved is None and kept is not None and kept.pods is not None and by_id is not None:
        moved = _moved_by_ids(kept, kept.pods, by_id)
    if moved is None or kept is None:
        kept = None
        index: Mapping[str, int] = {name: i for i, name in enumerate(names)}
        memo.forget_nodes_except(names)
        changed: Sequence[int] = range(len(views))
        asked: Container[int] = changed
    else:
        index = kept.index
        changed, asked = _changed(kept, views, on_node, now, moved), moved
    update = _Update(args, memo, views, kept)
    for i in changed:
        update.node(i, views[i], on_node[i], pods_on(i) if i in asked else None, now)
    update.write_derived(now)
    made = update.done(views, names, index, by_id, on_node, log) if len(index) == len(names) else None
    memo.carried_nodes = made
    return made


def open_carried(args: LoadAwareArgs, memo: LoadAwareMemo, views: Sequence[NodeView], pods: Sequence[PodView],
                 pods_on: Callable[[int], Sequence[PodView]], metrics: Mapping[str, NodeMetricView], now: float,
                 waterline_percent: IntArray | None = None, log: PodLog | None = None) -> LoadAwareState | None:
    """The session's load-aware state, as :func:`~scheduler.loadaware.snapshot.open_state` makes it, from the
    nodes' carried state (:func:`carry_nodes`); None when it cannot be carried."""
    nodes = carry_nodes(args, memo, views, pods, pods_on, metrics, now, log)
    if nodes is None:
        return None
    has_metric = nodes.has_metric
    exp = args.node_metric_expiration_seconds
    with np.errstate(invalid="ignore"):
        expired = has_metric & (np.isnan(nodes.update) | ((exp > 0) & (now - nodes.update >= exp)))
    cache = AssignedPodCache.of_groups(nodes.groups, nodes.node_of, now)
    return LoadAwareState.opened(args, nodes.names, nodes.index, nodes.allocatable, nodes.profiles, nodes.thresholds,
                                 metrics, cache, now, waterline_percent, (has_metric, expired),
                                 (nodes.has_status, nodes.rows), memo)
