"""Assigned-pod cache and the per-node "existing load" sums (docs/design/loadaware.md §5, §8).

Pods bound or reserved to a node are estimated until the node agent's NodeMetric reflects them, so a burst of
pods in one session does not pile onto the node whose (stale) metric looks idlest.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from operator import attrgetter

import numpy as np
import numpy.typing as npt

from common.clock import parse_rfc3339
from common.objects import NodeMetricView, PodView, ReportedPod, ReportedPods
from common.qos import PriorityClass
from common.resources import Resources
from common.slots import slot_maker

from .args import LoadAwareArgs
from .estimator import estimate_pod, estimate_vector
from .undated import UndatedGroups

__all__ = ["AssignedPod", "AssignedPodCache", "Stamp", "stamped_entry", "MetricLoad", "NodeLoad", "metric_load", "estimate_row", "node_load", "load_rows", "existing_load",
           "assigned_pod", "assigned_entry", "enters_cache", "RESERVATION_ANNOTATION", "NodeEntries"]

RESERVATION_ANNOTATION = "scheduling.koordinator.sh/reservation"
AFTER_INIT_ANNOTATION = "scheduling.koordinator.sh/load-estimated-seconds-after-initialized"
AFTER_SCHED_ANNOTATION = "scheduling.koordinator.sh/load-estimated-seconds-after-pod-scheduled"

IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True, slots=True)
class AssignedPod:
    key: str  # namespace/name: NodeMetric pod entries are keyed this way, not by UID
    node: str
    estimate: tuple[int, ...]  # in the args' resource vector order; all zero = absent
    is_prod: bool
    timestamp: float
    deadline: float | None

    @property
    def has_estimate(self) -> bool:
        return any(self.estimate)


# AssignedPod(...) made slot by slot (common.slots): an entry per pod placed, and per pod dated anew
_make_assigned = slot_maker(AssignedPod)


def _condition_time(pod: PodView, kind: str) -> float | None:
    for cond in (pod.raw.get("status") or {}).get("conditions") or []:
        if cond.get("type") == kind and cond.get("status") == "True" and cond.get("lastTransitionTime"):
            try:
                t = parse_rfc3339(str(cond["lastTransitionTime"]), field=f"pod {pod.key} condition {kind}")
            except ValueError:
                return None
            return t if t > 0 else None
    return None


def _seconds(pod: PodView, annotation: str, default: int | None, allow: bool) -> int | None:
    if allow and annotation in pod.annotations:
        try:
            v = int(pod.annotations[annotation])
        except ValueError:
            v = -1
        if v >= 0:
            return v
    return default


def enters_cache(pod: PodView) -> bool:
    """Bound, not terminated, and not a reservation placeholder."""
    return bool(pod.node_name) and not pod.terminal and RESERVATION_ANNOTATION not in pod.annotations


def assigned_pod(pod: PodView, node: str, now: float, args: LoadAwareArgs,
                 estimate: IntArray | None = None) -> AssignedPod:
    """The cache entry for a pod bound/reserved to ``node`` (estimate fixed at insertion time); ``estimate``: the
    pod's :func:`estimate_row` when the caller kept it (per pod shape), else it is computed."""
    return _entry(pod, node, now, args, estimate)[0]


@dataclass(frozen=True, slots=True)
class Stamp:
    """How the entry of a pod without a PodScheduled time is dated: with the session's time, and a deadline that
    time plus ``after_scheduled`` seconds (None: the deadline does not depend on it)."""

    after_scheduled: int | None

    def apply(self, entry: AssignedPod, now: float) -> AssignedPod:
        """``entry`` as :func:`assigned_entry` makes it at ``now``."""
        if entry.timestamp == now:
            return entry
        deadline = entry.deadline if self.after_scheduled is None else now + self.after_scheduled
        dated: AssignedPod = _make_assigned(entry.key, entry.node, entry.estimate, entry.is_prod, now, deadline)
        return dated


def assigned_entry(pod: PodView, node: str, now: float, args: LoadAwareArgs) -> tuple[AssignedPod, bool]:
    """:func:`assigned_pod`, and whether the entry depends on ``now`` (no PodScheduled time: it is stamped now)."""
    entry, stamp = stamped_entry(pod, node, now, args)
    return entry, stamp is not None


def estimate_row(pod: PodView, args: LoadAwareArgs) -> IntArray:
    """The pod's estimated usage in the args' resource order (read-only)."""
    est = estimate_vector(estimate_pod(pod, args.estimated_scaling_factors,
                                       allow_customize=args.allow_customize_estimation), args.resource_names)
    est.flags.writeable = False
    return est


def stamped_entry(pod: PodView, node: str, now: float, args: LoadAwareArgs,
                  estimate: IntArray | None = None) -> tuple[AssignedPod, Stamp | None]:
    """:func:`assigned_pod`, and how it is dated anew at another time when it depends on ``now`` (else None);
    ``estimate``: the pod's :func:`estimate_row` when the caller kept it."""
    entry, scheduled, from_timestamp = _entry(pod, node, now, args, estimate)
    if scheduled:
        return entry, None
    stamp = _STAMPS.get(from_timestamp)
    if stamp is None:
        if len(_STAMPS) >= _MAX_STAMPS:
            _STAMPS.clear()
        stamp = _STAMPS[from_timestamp] = Stamp(from_timestamp)
    return entry, stamp


# the stamps made, by their seconds after the session time (a few: the arguments' and the pods' annotations, all
# forgotten at once past the bound); a stamp is a frozen value, shared by the entries dated alike
_STAMPS: dict[int | None, Stamp] = {}
_MAX_STAMPS = 256


def _entry(pod: PodView, node: str, now: float, args: LoadAwareArgs,
           estimate: IntArray | None) -> tuple[AssignedPod, bool, int | None]:
    """:func:`assigned_pod`, whether the pod has a PodScheduled time (else the entry is dated ``now``) and the
    seconds after it its deadline falls (None: the deadline does not depend on that time)."""
    est = estimate_row(pod, args) if estimate is None else estimate
    # a pod the scheduler just placed has no conditions, nor (mostly) the annotations: nothing is looked for then
    conditions = (pod.raw.get("status") or {}).get("conditions")
    scheduled = _condition_time(pod, "PodScheduled") if conditions else None
    timestamp = scheduled if scheduled is not None else now
    custom = args.allow_customize_estimation and (AFTER_INIT_ANNOTATION in pod.annotations
                                                  or AFTER_SCHED_ANNOTATION in pod.annotations)
    after_init = (_seconds(pod, AFTER_INIT_ANNOTATION, args.estimated_seconds_after_initialized, True) if custom
                  else args.estimated_seconds_after_initialized)
    after_sched = (_seconds(pod, AFTER_SCHED_ANNOTATION, args.estimated_seconds_after_pod_scheduled, True) if custom
                   else args.estimated_seconds_after_pod_scheduled)
    # the Initialized time is read only where it may set the deadline
    initialized = _condition_time(pod, "Initialized") if conditions and after_init and after_init > 0 else None
    deadline: float | None = None
    from_timestamp: int | None = None
    if after_init and after_init > 0 and initialized is not None:
        deadline = initialized + after_init
    elif after_sched and after_sched > 0:
        deadline = timestamp + after_sched
        from_timestamp = after_sched
    entry: AssignedPod = _make_assigned(pod.key, node, tuple(est.tolist()), pod.priority_class == PriorityClass.PROD,
                                        timestamp, deadline)
    return entry, scheduled is not None, from_timestamp


@dataclass(frozen=True, slots=True)
class NodeEntries:
    """The assigned-pod entries of the pods on one node, in order, and as the cache's two maps hold them; entries
    with the same key (a broken snapshot) leave ``by_key`` empty, so the cache adds them one by one.  ``stamps``
    (one per entry, or empty) says how each is dated anew at another session time, ``dated`` the time the stamped
    ones carry (None: no entry depends on the time)."""

    node: str
    entries: tuple[AssignedPod, ...]
    by_key: Mapping[str, AssignedPod]
    node_of: Mapping[str, str]
    stamps: tuple[Stamp | None, ...] = ()
    dated: float | None = None

    @classmethod
    def of(cls, node: str, entries: Sequence[AssignedPod], stamps: Sequence[Stamp | None] = (),
           dated: float | None = None) -> NodeEntries:
        by_key = dict(zip(map(_KEY, entries), entries, strict=True))
        if len(by_key) != len(entries) or not all(map(node.__eq__, map(_NODE, entries))):
            made: NodeEntries = _make_entries(node, tuple(entries), {}, {}, tuple(stamps), dated)
        else:
            made = _make_entries(node, tuple(entries), by_key, dict.fromkeys(by_key, node), tuple(stamps), dated)
        return made

    def at(self, now: float | None) -> tuple[AssignedPod, ...]:
        """The entries as dated at session time ``now`` (None: as they are)."""
        if now is None or self.dated is None or self.dated == now:
            return self.entries
        return tuple(e if s is None else s.apply(e, now) for e, s in zip(self.entries, self.stamps, strict=True))


# NodeEntries(...) made slot by slot (common.slots): one per node whose pods changed, every session
_make_entries = slot_maker(NodeEntries)
_KEY, _NODE = attrgetter("key"), attrgetter("node")


class AssignedPodCache:
    """Per node: the pods the scheduler knows are there (bound or reserved). Mutable; owned by one plugin.

    Groups added for a session time other than the one their entries carry are dated anew only when their node is
    first read or changed (:meth:`add_nodes`): a session pays for the dates of the nodes it looks at only."""

    def __init__(self) -> None:
        self._by_node: dict[str, dict[str, AssignedPod]] = {}
        self._node_of: dict[str, str] = {}
        # per node, the group whose entries are still to be dated, and the time to date them with
        self._undated: dict[str, tuple[NodeEntries, float]] | UndatedGroups = {}

    @classmethod
    def of_groups(cls, groups: Mapping[str, NodeEntries], node_of: Mapping[str, str], now: float) -> AssignedPodCache:
        """:meth:`add_nodes` of ``groups`` (by node; no pod key in two groups, none twice in one, ``node_of`` their
        keys' nodes) into an empty cache, without copying a group until its node is first read or changed."""
        cache = cls()
        cache._node_of = dict(node_of)
        cache._undated = UndatedGroups(groups, now)
        return cache

    def _date(self, node: str) -> None:
        pending = self._undated.pop(node, None)
        if pending is not None:
            group, now = pending
            dated = zip(group.by_key, group.at(now), strict=True)
            pods = self._by_node.get(node)
            if pods is None:
                self._by_node[node] = dict(dated)
            else:
                pods.update(dated)

    def add(self, entry: AssignedPod) -> None:
        self.remove(entry.key)
        self._date(entry.node)
        self._by_node.setdefault(entry.node, {})[entry.key] = entry
        self._node_of[entry.key] = entry.node

    def add_all(self, entries: Iterable[AssignedPod]) -> None:
        """``add`` each entry in turn."""
        by_node, node_of, undated = self._by_node, self._node_of, self._undated
        for entry in entries:
            if entry.key in node_of or entry.node in undated:
                self.add(entry)
                continue
            pods = by_node.get(entry.node)
            if pods is None:
                pods = by_node[entry.node] = {}
            pods[entry.key] = entry
            node_of[entry.key] = entry.node

    def add_nodes(self, groups: Sequence[NodeEntries], now: float | None = None) -> None:
        """``add_all`` of every group's entries as dated at ``now`` (:meth:`NodeEntries.at`), group after group, as
        whole-dict copies: exact when the cache is empty and no pod key is in two groups (checked; otherwise the
        entries are added one by one)."""
        if not self._node_of and all(g.by_key or not g.entries for g in groups):
            total = 0
            for g in groups:
                if g.by_key:
                    self._by_node[g.node] = dict(g.by_key)
                    self._node_of.update(g.node_of)
                    total += len(g.by_key)
                    if now is not None and g.dated is not None and g.dated != now:
                        self._undated[g.node] = (g, now)
            if len(self._node_of) == total:
                return
            self._by_node.clear()
            self._node_of.clear()
            self._undated.clear()
        for g in groups:
            self.add_all(g.at(now))

    def remove(self, key: str) -> AssignedPod | None:
        node = self._node_of.pop(key, None)
        if node is None:
            return None
        self._date(node)
        return self._by_node.get(node, {}).pop(key, None)

    def pods_on(self, node: str) -> Iterable[AssignedPod]:
        self._date(node)
        return self._by_node.get(node, {}).values()

    def get(self, key: str) -> AssignedPod | None:
        node = self._node_of.get(key)
        if node is None:
            return None
        self._date(node)
        return self._by_node[node].get(key)

    def __len__(self) -> int:
        return len(self._node_of)


@dataclass(frozen=True, slots=True)
class NodeLoad:
    """The sums of docs/design/loadaware.md §5 for one node, as vectors in the args' resource order."""

    node_usage: IntArray | None
    aggregated: Mapping[tuple[str, float], IntArray]
    prod_usage: IntArray
    node_delta: IntArray
    prod_delta: IntArray
    node_estimated: IntArray


@dataclass(frozen=True, slots=True)
class MetricLoad:
    """What :func:`node_load` reads from one NodeMetric, in the args' resource order (Python ints: the vectors are
    a few entries long); it depends on the metric and the arguments only, so a NodeMetric that did not change
    need not be read again.  The aggregated usages are read when first asked for (:meth:`aggregate`): most
    configurations filter and score on the plain usage and never ask."""

    node_usage: tuple[int, ...] | None          # None without status.nodeMetric
    pod_usage: Mapping[str, tuple[int, ...]]   # namespace/name -> usage, for the pods reported with a usage
    prod_reported: frozenset[str]
    base_prod_usage: tuple[int, ...]           # the system usage when prodUsageIncludeSys, else zeros
    update: float | None
    interval: float
    source: Mapping[float, Mapping[str, Resources]] = field(repr=False)   # the metric's aggregated usages
    names: tuple[str, ...] = field(repr=False)
    _aggregated: dict[tuple[str, float], tuple[int, ...] | None] = field(default_factory=dict, repr=False,
                                                                         compare=False)

    def aggregate(self, kind: str, duration: float) -> tuple[int, ...] | None:
        """The ``kind`` usage aggregated over ``duration`` seconds; duration 0 is the longest duration reported
        for that kind; None when the metric has none."""
        key = (kind, duration)
        cached = self._aggregated
        if key in cached:
            return cached[key]
        found: Resources | None = None
        if duration == 0:
            longest = -1.0
            for d, per in self.source.items():
                res = per.get(kind)
                if res is not None and d >= longest:
                    longest, found = d, res
        else:
            found = (self.source.get(duration) or {}).get(kind)
        value = None if found is None else _ints(found, self.names)
        cached[key] = value
        return value

    @property
    def aggregated(self) -> dict[tuple[str, float], tuple[int, ...]]:
        """Every aggregated usage by (kind, duration), plus (kind, 0.0) for the longest duration of each kind."""
        out: dict[tuple[str, float], tuple[int, ...]] = {}
        for duration, per in self.source.items():
            for kind in per:
                out[(kind, duration)] = _ints(per[kind], self.names)
        for kind in dict.fromkeys(kind for per in self.source.values() for kind in per):   # first-seen order
            got = self.aggregate(kind, 0.0)
            if got is not None:
                out[(kind, 0.0)] = got
        return out


# MetricLoad(...) made slot by slot (common.slots), as a frozen dataclass's __init__ sets each through __setattr__ (one
# per NodeMetric report the scheduler reads: every node, every session)
_make_metric_load = slot_maker(MetricLoad)
_PROD = PriorityClass.PROD.value   # a reported pod's priority text (an enum member's value is a property lookup)


def _ints(res: Mapping[str, int], names: Sequence[str]) -> tuple[int, ...]:
    d = res.as_dict() if isinstance(res, Resources) else res
    return tuple([d.get(n, 0) for n in names])


def metric_load(metric: NodeMetricView, args: LoadAwareArgs) -> MetricLoad:
    names = args.resource_names
    zeros = (0,) * len(names)
    has_status = bool((metric.raw.get("status") or {}).get("nodeMetric"))
    node_usage = _ints(metric.node_usage, names) if has_status else None
    # the pods reported with a usage, by namespace/name (a later entry of the same pod replaces an earlier one)
    pod_usage: dict[str, tuple[int, ...]] = {}
    prod_reported: set[str] = set()
    prod_value = _PROD
    two = len(names) == 2
    n0, n1 = names if two else ("", "")
    pods = metric.pods
    # as handed over by the agent: who each pod is and its usage's quantities, no view made (the same numbers)
    reported: Iterable[tuple[ReportedPod, Mapping[str, int]]] = (
        zip(pods.pods, pods.usages, strict=True) if type(pods) is ReportedPods else ((p, p.usage) for p in pods))
    for p, usage in reported:
        if not usage:
            continue
        key = f"{p.namespace}/{p.name}"
        # a Resources, like the quantities handed over, holds no zero: a name it lacks reads 0
        get = usage.get
        pod_usage[key] = (get(n0, 0), get(n1, 0)) if two else tuple([get(n, 0) for n in names])
        if p.priority == prod_value:
            prod_reported.add(key)
        else:
            prod_reported.discard(key)
    base = zeros
    if args.prod_usage_include_sys:
        sys_raw = ((metric.raw.get("status") or {}).get("nodeMetric") or {}).get("systemUsage") or {}
        base = _ints(Resources.parse(sys_raw.get("resources"), field="systemUsage"), names)
    load: MetricLoad = _make_metric_load(node_usage, pod_usage, frozenset(prod_reported), base, metric.update_time,
                                         float(metric.report_interval_seconds or 60), metric.aggregated,
                                         tuple(names), {})
    return load


def _sums(m: MetricLoad, pods: Iterable[AssignedPod], k: int) -> tuple[list[int], list[int], list[int], list[int]]:
    """prod usage, node delta, prod delta and node estimate of docs/design/loadaware.md §5 over the node's assigned pods."""
    prod_usage = list(m.base_prod_usage)
    node_delta = [0] * k
    prod_delta = [0] * k
    node_estimated = [0] * k
    update, interval = m.update, m.interval
    pod_usage, prod_reported = m.pod_usage, m.prod_reported
    cols = range(k)
    for p in pods:
        u = pod_usage.get(p.key)
        active = p.is_prod and p.key in prod_reported
        if active and u is not None:
            for j in cols:
                prod_usage[j] += u[j]
        e = p.estimate
        if not any(e):
            continue
        estimate_it = (u is None or update is None or p.timestamp > update - interval
                       or (p.deadline is not None and p.deadline > update))
        for j in cols:
            if estimate_it:
                node_delta[j] += max(0, e[j] - (0 if u is None else u[j]))
            node_estimated[j] += e[j]
        if p.is_prod:
            if not active and u is not None:
                u, estimate_it = None, True
            if estimate_it:
                for j in cols:
                    prod_delta[j] += max(0, e[j] - (0 if u is None else u[j]))
    return prod_usage, node_delta, prod_delta, node_estimated


def node_load(metric: NodeMetricView, pods: Iterable[AssignedPod], args: LoadAwareArgs,
              read: MetricLoad | None = None) -> NodeLoad:
    """The node's sums; ``read`` is ``metric_load(metric, args)`` when the caller kept it."""
    m = read if read is not None else metric_load(metric, args)
    prod_usage, node_delta, prod_delta, node_estimated = _sums(m, pods, len(args.resource_names))

    def arr(v: Sequence[int]) -> IntArray:
        return np.array(v, dtype=np.int64)

    return NodeLoad(None if m.node_usage is None else arr(m.node_usage),
                    {key: arr(v) for key, v in m.aggregated.items()}, arr(prod_usage), arr(node_delta),
                    arr(prod_delta), arr(node_estimated))


def load_rows(m: MetricLoad, pods: Iterable[AssignedPod], k: int, plain: tuple[str, float],
              score: tuple[str, float]) -> tuple[bool, list[int]]:
    """Whether the metric has a status, and the existing load for the filter (``plain``: the aggregation type and
    duration the node's profile filters on, or ``("", 0.0)``), for prod pods and for the score (the args'
    aggregation), one after the other — what :func:`existing_load` gives on :func:`node_load`, a missing one as
    zeros, in Python ints."""
    if k == 2:
        return m.node_usage is not None, _load_rows2(m, pods, plain, score)
    return m.node_usage is not None, _load_rows_any(m, pods, k, plain, score)


def _load_rows_any(m: MetricLoad, pods: Iterable[AssignedPod], k: int, plain: tuple[str, float],
                   score: tuple[str, float]) -> list[int]:
    """:func:`load_rows`' values for any number of resources."""
    prod_usage, node_delta, prod_delta, node_estimated = _sums(m, pods, k)

    def existing(agg_type: str, agg_duration: float) -> Sequence[int]:
        if agg_type:
            base = m.aggregate(agg_type, agg_duration)
            if base is None and agg_duration == 0:
                base = m.node_usage
            if base is not None:
                return [b + d for b, d in zip(base, node_delta, strict=True)]
            return node_estimated
        if m.node_usage is None:
            return [0] * k
        return [b + d for b, d in zip(m.node_usage, node_delta, strict=True)]

    out = list(existing(*plain))
    out.extend(a + b for a, b in zip(prod_usage, prod_delta, strict=True))
    out.extend(existing(*score))
    return out


def _load_rows2(m: MetricLoad, pods: Iterable[AssignedPod], plain: tuple[str, float],
                score: tuple[str, float]) -> list[int]:
    """:func:`load_rows`' values for two resources, the sums of :func:`_sums` kept in locals (the common case:
    cpu and memory; this runs for every node whose NodeMetric or pods changed, every session)."""
    prod0, prod1, nd0, nd1, ne0, ne1 = _sums2(m, pods)
    plain0, plain1 = _existing2(m, plain, nd0, nd1, ne0, ne1)
    score0, score1 = _existing2(m, score, nd0, nd1, ne0, ne1)
    return [plain0, plain1, prod0, prod1, score0, score1]


def _sums2(m: MetricLoad, pods: Iterable[AssignedPod]) -> tuple[int, int, int, int, int, int]:
    """:func:`_sums` for two resources: the prod load (prod usage plus prod delta), the node delta and the node
    estimate, each as two ints."""
    pu0, pu1 = m.base_prod_usage
    nd0 = nd1 = pd0 = pd1 = ne0 = ne1 = 0
    update = m.update
    recent = update - m.interval if update is not None else 0.0
    pod_usage, prod_reported = m.pod_usage, m.prod_reported
    for p in pods:
        key = p.key
        u = pod_usage.get(key)
        is_prod = p.is_prod
        active = is_prod and key in prod_reported
        if active and u is not None:
            pu0 += u[0]
            pu1 += u[1]
        e0, e1 = p.estimate
        if not (e0 or e1):
            continue
        estimate_it = (u is None or update is None or p.timestamp > recent
                       or (p.deadline is not None and p.deadline > update))
        if estimate_it:
            # the estimate above the reported usage, never negative
            d0, d1 = (e0, e1) if u is None else (e0 - u[0], e1 - u[1])
            d0 = d0 if d0 > 0 else 0
            d1 = d1 if d1 > 0 else 0
            nd0 += d0
            nd1 += d1
        ne0 += e0
        ne1 += e1
        if is_prod:
            if not active and u is not None:  # a usage not reported as prod: the whole estimate counts
                pd0 += e0 if e0 > 0 else 0
                pd1 += e1 if e1 > 0 else 0
            elif estimate_it:
                pd0 += d0
                pd1 += d1
    return pu0 + pd0, pu1 + pd1, nd0, nd1, ne0, ne1


def _existing2(m: MetricLoad, aggregation: tuple[str, float], nd0: int, nd1: int, ne0: int,
               ne1: int) -> tuple[int, int]:
    """The existing load for two resources on ``aggregation`` (type and duration, or ``("", 0.0)`` for the plain
    usage), from the node delta and node estimate of :func:`_sums2`."""
    usage = m.node_usage
    agg_type, agg_duration = aggregation
    if agg_type:
        base = m.aggregate(agg_type, agg_duration)
        if base is None and agg_duration == 0:
            base = usage
        if base is not None:
            return base[0] + nd0, base[1] + nd1
        return ne0, ne1
    if usage is None:
        return 0, 0
    return usage[0] + nd0, usage[1] + nd1


def existing_load(load: NodeLoad, *, prod: bool, agg_type: str = "", agg_duration: float = 0.0) -> IntArray | None:
    """Existing load for Filter/Score (docs/design/loadaware.md §5); None when ``status.nodeMetric`` is absent for a non-prod query."""
    if prod:
        return load.prod_usage + load.prod_delta
    if agg_type:
        base = load.aggregated.get((agg_type, agg_duration))
        if base is None and agg_duration == 0:
            base = load.node_usage
        if base is not None:
            return base + load.node_delta
        return load.node_estimated
    if load.node_usage is None:
        return None
    return load.node_usage + load.node_delta
