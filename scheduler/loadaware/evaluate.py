"""Vectorised LoadAwareScheduling Filter and Score over all session nodes (docs/design/loadaware.md §6-§7).

Everything that depends only on the node (threshold profile, existing load, metric freshness) is precomputed into
``[n, k]`` matrices when the session opens; a pod then costs a handful of NumPy operations over every node.
``reserve``/``unreserve`` refresh one node's rows from the assigned-pod cache, so pods placed earlier in the same
session count against their node (burst safety).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from common.objects import NodeMetricView
from scheduler.scoring.inputs import row_lists

from .args import LoadAwareArgs
from .cache import AssignedPod, AssignedPodCache, MetricLoad, NodeEntries, load_rows, metric_load, node_load
from .memo import LoadAwareMemo, NodeRows
from .profile import ThresholdProfile, effective_profile, plugin_profile

__all__ = ["EXPIRED_REASON", "LoadFilter", "NodeThresholds", "LoadAwareState", "is_expired", "node_rows",
           "threshold_matrices"]

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]
FloatArray = npt.NDArray[np.float64]

EXPIRED_REASON = "node(s) nodeMetric expired"
# LoadAwareState.packed: reason code * _PACK + failing resource index + 1 (far more than any resource count)
_PACK = 1 << 16
# up to this many rows, the filter and score of a few rows (those a row cache recomputes after a placement) are
# computed node by node in Python with the same arithmetic, cheaper than the vector form's dozens of NumPy calls
ROW_BY_ROW = 4


def is_expired(update_time: float | None, now: float, expiration_seconds: int) -> bool:
    """Expired when never updated, or ``now - updateTime >= expiration`` (note ``>=``)."""
    return update_time is None or (expiration_seconds > 0 and now - update_time >= expiration_seconds)


@dataclass(frozen=True, slots=True)
class NodeThresholds:
    """Which thresholds applied on one node for one pod — what ``explain`` prints."""

    kind: str  # "usage", "prod usage", "aggregated usage (p95, 300s)"
    source: str  # "plugin", "node annotation"
    thresholds: Mapping[str, int]
    waterline_caps: Mapping[str, int]
    used_percent: Mapping[str, int]


# what the filter takes from the node state for prod or non-prod pods (LoadAwareState._static_masks)
_Static = tuple[BoolArray, IntArray, BoolArray, IntArray, BoolArray, BoolArray, bool, bool]


@dataclass(frozen=True, slots=True)
class LoadFilter:
    mask: BoolArray  # True = passes
    failed_resource: IntArray  # resource index of the first failing resource, -1 if none/other reason
    reason_code: IntArray  # 0 pass, 1 expired, 2 over threshold, 3 over waterline cap
    prod_pod: BoolArray  # per node: the prod thresholds applied


def _percent(used: IntArray, allocatable: IntArray) -> IntArray:
    """``round(used / allocatable * 100)`` in float64, half away from zero (values are >= 0); 0 where alloc is 0."""
    alloc = allocatable.astype(np.float64)
    pct = np.where(allocatable > 0, used.astype(np.float64) / np.where(alloc > 0, alloc, 1.0) * 100.0, 0.0)
    whole = np.floor(pct)  # pct >= 0, so math.Round is floor + (fraction >= 0.5); x - floor(x) is exact
    return (whole + (pct - whole >= 0.5)).astype(np.int64)


def threshold_matrices(profiles: Sequence[ThresholdProfile], names: Sequence[str]
                        ) -> tuple[IntArray, IntArray, BoolArray, BoolArray]:
    """Per node: the plain and prod thresholds in resource order, whether prod thresholds apply, whether the
    aggregated profile applies."""
    n, k = len(profiles), len(names)
    plain_thr = np.zeros((n, k), dtype=np.int64)
    prod_thr = np.zeros((n, k), dtype=np.int64)
    for i, p in enumerate(profiles):
        plain = p.aggregated.usage_thresholds if p.aggregated is not None else p.usage_thresholds
        plain_thr[i] = [plain.get(r, 0) for r in names]
        prod_thr[i] = [p.prod_usage_thresholds.get(r, 0) for r in names]
    prod_enabled = np.array([p.prod_enabled for p in profiles], dtype=np.bool_)
    agg_used = np.array([p.aggregated is not None for p in profiles], dtype=np.bool_)
    for a in (plain_thr, prod_thr, prod_enabled, agg_used):
        a.flags.writeable = False
    return plain_thr, prod_thr, prod_enabled, agg_used


def node_rows(args: LoadAwareArgs, profile: ThresholdProfile, m: MetricLoad, pods: Iterable[AssignedPod]) -> NodeRows:
    """A node's existing load for the filter (on its profile's aggregation), prod pods and the score, from what
    :func:`metric_load` read of its NodeMetric and its assigned pods as dated for the session."""
    plain, score = row_aggregations(args, profile)
    has, packed = load_rows(m, pods, len(args.resource_names), plain, score)
    return NodeRows.from_values(has, packed)


def row_aggregations(args: LoadAwareArgs, profile: ThresholdProfile) -> tuple[tuple[str, float], tuple[str, float]]:
    """The aggregations a node's rows read: the one its profile filters on (``("", 0.0)``: the plain usage) and
    the score's."""
    prof = profile.aggregated
    agg = args.aggregated
    return ((prof.aggregation_type, prof.duration) if prof else ("", 0.0),
            (agg.score_aggregation_type, agg.score_aggregated_duration))


def _used_percent(used: int, estimate: int, divisor: float) -> int:
    """One resource's used percent with the pod's estimate, as :meth:`LoadAwareState.used_percent` computes it
    (float64, half up) where the node's allocatable is above 0."""
    p = float(used + estimate) / divisor * 100.0
    whole = float(math.floor(p))
    return int(whole) + (1 if p - whole >= 0.5 else 0)


class LoadAwareState:
    """Per-session matrices for one plugin instance (resource order = ``args.resource_names``)."""

    def __init__(
        self,
        args: LoadAwareArgs,
        node_names: Sequence[str],
        allocatable: IntArray,
        annotations: Sequence[Mapping[str, str]],
        metrics: Mapping[str, NodeMetricView],
        cache: AssignedPodCache,
        now: float,
        waterline_percent: IntArray | None = None,
        memo: LoadAwareMemo | None = None,
        groups: Sequence[NodeEntries] | None = None,
    ) -> None:
        """``groups``: the entries ``cache`` was filled with, per node in ``node_names`` order (from ``memo``,
        which then keeps each node's rows while its group, metric and profile stay the same objects)."""
        if memo is not None:
            profiles: list[ThresholdProfile] = [memo.profile(a) for a in annotations]
            # the profiles are memoised objects: while they stay the same, so do these matrices (never written)
            thresholds = memo.for_profiles(profiles, lambda: threshold_matrices(profiles, args.resource_names))
        else:
            base = plugin_profile(args)
            profiles = [effective_profile(args, a, base) for a in annotations]
            thresholds = threshold_matrices(profiles, args.resource_names)
        self._setup(args, node_names, {name: i for i, name in enumerate(node_names)}, allocatable, profiles,
                    thresholds, metrics, cache, now, waterline_percent)
        self.has_metric = np.array([nm in metrics for nm in self.node_names], dtype=np.bool_)
        self.expired = np.array(
            [nm in metrics and is_expired(metrics[nm].update_time, now, args.node_metric_expiration_seconds)
             for nm in self.node_names], dtype=np.bool_)
        n, k = len(self.node_names), len(self.names)
        self.has_status = np.zeros(n, dtype=np.bool_)
        self.load_filter = np.zeros((n, k), dtype=np.int64)
        self.load_prod = np.zeros((n, k), dtype=np.int64)
        self.load_score = np.zeros((n, k), dtype=np.int64)
        self._memo = memo
        self._fill_rows(memo, groups)

    @classmethod
    def opened(cls, args: LoadAwareArgs, node_names: Sequence[str], index: Mapping[str, int], allocatable: IntArray,
               profiles: Sequence[ThresholdProfile], thresholds: tuple[IntArray, IntArray, BoolArray, BoolArray],
               metrics: Mapping[str, NodeMetricView], cache: AssignedPodCache, now: float,
               waterline_percent: IntArray | None, known: tuple[BoolArray, BoolArray],
               rows: tuple[BoolArray, IntArray], memo: LoadAwareMemo | None = None) -> LoadAwareState:
        """A state from parts already derived (:mod:`scheduler.loadaware.carried`), as :meth:`__init__` derives
        them: ``known`` is (has_metric, expired), ``rows`` (has_status, the filter, prod and score rows side by
        side, ``[n, 3k]``); the arrays are copied where the session changes them."""
        self = cls.__new__(cls)
        self._setup(args, node_names, index, allocatable, profiles, thresholds, metrics, cache, now,
                    waterline_percent)
        self.has_metric, self.expired = known
        has_status, packed = rows
        k = len(self.names)
        self.has_status = has_status.copy()
        self.load_filter = packed[:, :k].copy()
        self.load_prod = packed[:, k:2 * k].copy()
        self.load_score = packed[:, 2 * k:].copy()
        self._memo = memo
        return self

    def _setup(self, args: LoadAwareArgs, node_names: Sequence[str], index: Mapping[str, int],
               allocatable: IntArray, profiles: Sequence[ThresholdProfile],
               thresholds: tuple[IntArray, IntArray, BoolArray, BoolArray], metrics: Mapping[str, NodeMetricView],
               cache: AssignedPodCache, now: float, waterline_percent: IntArray | None) -> None:
        """What every state holds whatever made its rows."""
        self.args = args
        self.names = args.resource_names
        self.node_names = list(node_names)
        self.index = index
        self.allocatable = allocatable.astype(np.int64)
        self.cache = cache
        self.metrics = metrics
        self.weights = np.array([args.resource_weights.get(r, 0) for r in self.names], dtype=np.int64)
        # what the score reads of the weights for every pod, worked out once: as Python integers, their sum with
        # the dominant resource's weight, and whether anything is weighted
        self._weight_list: list[int] = self.weights.tolist()
        self._weight_sum = sum(self._weight_list) + args.dominant_resource_weight
        self._weighted = any(self._weight_list) or args.dominant_resource_weight != 0
        self.profiles = list(profiles)
        self.thr_plain, self.thr_prod, self.prod_enabled, self.agg_used = thresholds
        # waterline percent per node/resource (0 = none), lowered by the margin; off without respectWaterlines
        self.waterline_cap = np.zeros((len(self.node_names), len(self.names)), dtype=np.int64)
        if args.respect_waterlines and waterline_percent is not None:
            caps = waterline_percent.astype(np.int64)
            self.waterline_cap = np.where(caps > 0, np.maximum(caps - args.waterline_margin, 0), 0)
        self._static: dict[bool, _Static] = {}
        self._plain: dict[bool, tuple[IntArray, IntArray, FloatArray]] = {}   # _plain_inputs, kept with _static
        self._valid: BoolArray | None = None   # the nodes the score reads a load of (_scored)
        self._valid_all = False   # whether that is every node (kept with _valid)
        self._alloc_div = np.where(self.allocatable > 0, self.allocatable, 1).astype(np.float64)
        self._alloc_pos = self.allocatable > 0
        self._alloc_all_pos = bool(self._alloc_pos.all())
        self.now = now

    def row_inputs(self) -> list[npt.NDArray[np.int64] | npt.NDArray[np.bool_]]:
        """Every per-node array the filter and the score read (``filter``, ``filter_packed``, ``score``); besides
        them they read only ``args`` and the pod's estimate.  A row cache of them carried from one session to the
        next compares these (``scheduler.framework.arrays.carried_caches``)."""
        return [self.allocatable, self.thr_plain, self.thr_prod, self.prod_enabled, self.waterline_cap,
                self.has_metric, self.expired, self.has_status, self.load_filter, self.load_prod, self.load_score]

    # ---- node rows ------------------------------------------------------------------------------------------------

    def _rows(self, i: int, metric: NodeMetricView, pods: Iterable[AssignedPod]) -> NodeRows:
        """The node's existing load (node_load + existing_load for the filter, prod and the score)."""
        m = metric_load(metric, self.args) if self._memo is None else self._memo.metric(metric)
        return node_rows(self.args, self.profiles[i], m, pods)

    def _fill_rows(self, memo: LoadAwareMemo | None, groups: Sequence[NodeEntries] | None) -> None:
        """Every node's rows as the session opens (nodes without a NodeMetric keep zero rows)."""
        at: list[int] = []
        rows: list[NodeRows] = []
        for i, name in enumerate(self.node_names):
            metric = self.metrics.get(name)
            if metric is None:
                continue
            if memo is None or groups is None:
                got = self._rows(i, metric, self.cache.pods_on(name))
            else:
                group, profile = groups[i], self.profiles[i]
                hit = memo.node_rows(name, metric, profile, group, self.now)
                got = hit if hit is not None else memo.keep_rows(
                    name, metric, profile, group, self.now, self._rows(i, metric, self.cache.pods_on(name)))
            at.append(i)
            rows.append(got)
        if memo is not None:
            memo.forget_nodes_except(self.node_names)
        if not at:
            return
        self.has_status[at] = [r.has_status for r in rows]
        k = len(self.names)
        packed = np.array([r.values for r in rows], dtype=np.int64).reshape(len(at), 3 * k)
        self.load_filter[at] = packed[:, :k]
        self.load_prod[at] = packed[:, k:2 * k]
        self.load_score[at] = packed[:, 2 * k:]

    def _refresh(self, i: int) -> None:
        """The node's rows computed anew from its NodeMetric and assigned pods (after a pod came or went), written
        value by value where there are two resources (a row write converts a sequence: twice the cost)."""
        name = self.node_names[i]
        metric = self.metrics.get(name)
        if metric is None:
            return
        m = metric_load(metric, self.args) if self._memo is None else self._memo.metric(metric)
        k = len(self.names)
        has, values = load_rows(m, self.cache.pods_on(name), k, *row_aggregations(self.args, self.profiles[i]))
        if bool(self.has_status[i]) != has:
            self._static.clear()
            self._plain.clear()
            self._valid = None
            self.has_status[i] = has
        if k == 2:
            f0, f1, p0, p1, s0, s1 = values
            lf, lp, ls = self.load_filter, self.load_prod, self.load_score
            lf[i, 0] = f0
            lf[i, 1] = f1
            lp[i, 0] = p0
            lp[i, 1] = p1
            ls[i, 0] = s0
            ls[i, 1] = s1
            return
        self.load_filter[i] = values[:k]
        self.load_prod[i] = values[k:2 * k]
        self.load_score[i] = values[2 * k:]

    def reserve(self, entry: AssignedPod) -> None:
        self.cache.add(entry)
        i = self.index.get(entry.node)
        if i is not None:
            self._refresh(i)

    def unreserve(self, key: str) -> None:
        entry = self.cache.remove(key)
        if entry is not None and entry.node in self.index:
            self._refresh(self.index[entry.node])

    # ---- filter ---------------------------------------------------------------------------------------------------

    def _thresholds(self, is_prod: bool) -> tuple[BoolArray, IntArray, IntArray]:
        prod_pod = self.prod_enabled & is_prod
        thr = np.where(prod_pod[:, None], self.thr_prod, self.thr_plain)
        load = np.where(prod_pod[:, None], self.load_prod, self.load_filter)
        return prod_pod, thr, load

    def used_percent(self, load: IntArray, estimate: IntArray, rows: IntArray | None = None) -> IntArray:
        """Per node (or per node of ``rows``, the rows of ``load``): the used percent with the pod's estimate."""
        sel = slice(None) if rows is None else rows
        # same float arithmetic as _percent (used / alloc * 100, then half-up), with the divisor precomputed
        pct = (load + estimate[None, :]).astype(np.float64) / self._alloc_div[sel] * 100.0
        whole = np.floor(pct)
        out: IntArray = np.where(self._alloc_pos[sel], whole + (pct - whole >= 0.5), 0.0).astype(np.int64)
        return out

    def _static_masks(self, is_prod: bool) -> _Static:
        """Everything of the filter that depends on the pod only through ``is_prod`` (cached per session), and
        whether any node takes the prod thresholds and any node has a waterline cap to check."""
        got = self._static.get(is_prod)
        if got is None:
            prod_pod = self.prod_enabled & is_prod
            thr = np.where(prod_pod[:, None], self.thr_prod, self.thr_plain)
            caps = self.waterline_cap
            active = (thr != 0).any(axis=1) | (caps != 0).any(axis=1)
            considered = active & self.has_metric
            expired = considered & self.expired & self.args.filter_expired_node_metrics
            code = np.zeros(len(self.node_names), dtype=np.int64)
            if not self.args.enable_schedule_when_node_metrics_expired:
                code[expired] = 1
            checked = considered & ~expired & self.has_status
            thr_on = (thr > 0) & self._alloc_pos & checked[:, None]
            cap_on = (caps > 0) & self._alloc_pos & checked[:, None]
            got = self._static[is_prod] = (prod_pod, thr, checked, code, thr_on, cap_on, bool(prod_pod.any()),
                                           bool(cap_on.any()))
        return got

    def filter(self, estimate: IntArray, *, is_prod: bool, is_daemonset: bool,
               rows: IntArray | None = None) -> LoadFilter:
        """The filter on every node, or on ``rows`` only (each row depends on that node alone)."""
        n = len(self.node_names) if rows is None else len(rows)
        if is_daemonset or n == 0:
            return LoadFilter(np.ones(n, dtype=np.bool_), np.full(n, -1, dtype=np.int64), np.zeros(n, dtype=np.int64),
                              np.zeros(n, dtype=np.bool_))
        prod_pod, _thr, _checked, code, thr_on, cap_on, prod_any, cap_any = self._static_masks(is_prod)
        thr, caps = _thr, self.waterline_cap
        if rows is not None:
            prod_pod, thr_on, cap_on = prod_pod[rows], thr_on[rows], cap_on[rows]
            thr, code, caps = thr[rows], code[rows], caps[rows]
        load_filter = self.load_filter if rows is None else self.load_filter[rows]
        if prod_any:
            load = np.where(prod_pod[:, None], self.load_prod if rows is None else self.load_prod[rows], load_filter)
        else:
            load = load_filter
        pct = self.used_percent(load, estimate, rows)
        over_thr = thr_on & (pct > thr)
        any_thr = over_thr.any(axis=1)
        if cap_any:
            over_cap = cap_on & (pct > caps)
            any_cap = over_cap.any(axis=1) & ~any_thr
            failing = bool(any_thr.any()) or bool(any_cap.any())
        else:
            failing = bool(any_thr.any())
        if not failing:
            return LoadFilter(code == 0, np.full(n, -1, dtype=np.int64), code.copy(), prod_pod)
        if not cap_any:
            over_cap = np.zeros_like(over_thr)
            any_cap = np.zeros(n, dtype=np.bool_)
        failed = np.where(any_thr, np.argmax(over_thr, axis=1), np.where(any_cap, np.argmax(over_cap, axis=1), -1))
        code = np.where(any_thr, 2, np.where(any_cap, 3, code))
        return LoadFilter(code == 0, failed.astype(np.int64), code.astype(np.int64), prod_pod)

    def filter_packed(self, estimate: IntArray, *, is_prod: bool, rows: IntArray | None = None) -> IntArray:
        """``packed(filter(...))`` of a pod that is not a daemon pod, on every node or on ``rows``: a few rows (what
        a row cache recomputes after a placement) node by node in Python, with the same arithmetic."""
        if rows is not None and len(rows) <= ROW_BY_ROW:
            return np.array(self._packed_rows(rows.tolist(), estimate.tolist(), is_prod), dtype=np.int64)
        static = self._static_masks(is_prod)
        if static[6] or static[7] or (rows is not None and not len(rows)):   # prod thresholds or caps somewhere
            return self.packed(self.filter(estimate, is_prod=is_prod, is_daemonset=False, rows=rows))
        return self._packed_plain(estimate, is_prod, rows)

    def _plain_inputs(self, is_prod: bool) -> tuple[IntArray, IntArray, FloatArray]:
        """What :meth:`_packed_plain` reads besides the loads, per node: each resource's threshold where it is
        checked (the largest int64, which no percent exceeds, where not), and the node's static code packed; and
        what :meth:`_passes_plain` compares the unrounded percents with: the threshold plus one half where it is
        checked (a percent rounded half up exceeds a positive integer threshold exactly when it reaches that; the
        sum is exact), +inf where not, and -inf on every resource of a node its static code fails."""
        got = self._plain.get(is_prod)
        if got is None:
            _prod, thr, _checked, code, thr_on, _cap_on, _prod_any, _cap_any = self._static_masks(is_prod)
            limits = np.where(thr_on, thr.astype(np.float64) + 0.5, np.inf)
            limits[code != 0] = -np.inf
            got = self._plain[is_prod] = (np.where(thr_on, thr, np.iinfo(np.int64).max), code * _PACK, limits)
        return got

    def _passes_plain(self, estimate: IntArray, is_prod: bool, rows: IntArray) -> BoolArray:
        """Whether the nodes ``rows`` pass :meth:`_packed_plain` (its outcome is 0), in fewer NumPy calls: the same
        percents, unrounded, below every resource's limit (:meth:`_plain_inputs`).  For a percent p that is not
        negative, p - floor(p) is exact, so p rounded half up is above an integer t exactly when p >= t + 0.5; a
        negative percent is below every limit and rounds to at most 0, below every checked threshold."""
        limits = self._plain_inputs(is_prod)[2]
        pct = (self.load_filter[rows] + estimate).astype(np.float64)
        pct /= self._alloc_div[rows]
        pct *= 100.0
        out: BoolArray = np.logical_and.reduce(pct < limits[rows], axis=1)
        return out

    def _packed_plain(self, estimate: IntArray, is_prod: bool, rows: IntArray | None) -> IntArray:
        """:meth:`filter`'s packed outcome where no node takes prod thresholds nor has a waterline cap: the
        threshold check alone, in fewer NumPy calls (:meth:`used_percent`'s arithmetic, a percent compared only
        where a threshold is checked, the same outcome)."""
        thr, base, _limits = self._plain_inputs(is_prod)
        if rows is None:
            load, div, base = self.load_filter, self._alloc_div, base.copy()
        else:
            load, div, thr, base = self.load_filter[rows], self._alloc_div[rows], thr[rows], base[rows]
        pct = (load + estimate).astype(np.float64)
        pct /= div
        pct *= 100.0
        whole = np.floor(pct)
        pct -= whole
        whole += pct >= 0.5   # half up: the used percents are not negative
        over = whole.astype(np.int64) > thr
        failing = over.any(axis=1)
        if not failing.any():
            return base
        out: IntArray = np.where(failing, 2 * _PACK + 1 + np.argmax(over, axis=1), base)
        return out

    def passes_rows_of(self, estimate: IntArray, *, is_prod: bool) -> Callable[[list[int]], list[bool]]:
        """Whether some nodes pass :meth:`filter_packed`, for the pods of a run with this estimate (a few nodes
        checked without making arrays)."""
        est = estimate.tolist()

        def rows(at: list[int]) -> list[bool]:
            if len(at) <= ROW_BY_ROW:
                return [v == 0 for v in self._packed_rows(at, est, is_prod)]
            idx = np.array(at, dtype=np.intp)
            static = self._static_masks(is_prod)
            if not static[6] and not static[7] and self.names:   # no prod thresholds nor caps anywhere
                plain: list[bool] = self._passes_plain(estimate, is_prod, idx).tolist()
                return plain
            out: list[bool] = (self.filter_packed(estimate, is_prod=is_prod, rows=idx) == 0).tolist()
            return out
        return rows

    def _packed_rows(self, at: list[int], est: list[int], is_prod: bool) -> list[int]:
        """The packed filter outcome of the nodes ``at``, as :meth:`filter` computes it for those rows: the first
        resource over its threshold, else the first over its waterline cap, else the node's static code (a used
        percent is worked out only where a threshold or cap is checked, where the allocatable is above 0)."""
        prod_pod, thr, _checked, code, thr_on, cap_on, prod_any, cap_any = self._static_masks(is_prod)
        out = []
        for i in at:
            load = (self.load_prod if prod_any and prod_pod[i] else self.load_filter)[i].tolist()
            div = self._alloc_div[i].tolist()
            outcome = int(code[i]) * _PACK
            for j, (on, t) in enumerate(zip(thr_on[i].tolist(), thr[i].tolist(), strict=True)):
                if on and _used_percent(load[j], est[j], div[j]) > t:
                    outcome = 2 * _PACK + j + 1
                    break
            else:
                if cap_any:
                    for j, (on, c) in enumerate(zip(cap_on[i].tolist(), self.waterline_cap[i].tolist(), strict=True)):
                        if on and _used_percent(load[j], est[j], div[j]) > c:
                            outcome = 3 * _PACK + j + 1
                            break
            out.append(outcome)
        return out

    def packed(self, result: LoadFilter) -> IntArray:
        """The filter's outcome per node as one integer (0 = passes): what a row cache keeps (:meth:`unpacked`)."""
        out: IntArray = result.reason_code * _PACK + result.failed_resource + 1
        return out

    def unpacked(self, packed: IntArray, *, is_prod: bool) -> LoadFilter:
        """The :class:`LoadFilter` over every node that :meth:`packed` made ``packed`` of."""
        prod_pod = self._static_masks(is_prod)[0]
        return LoadFilter(packed == 0, packed % _PACK - 1, packed // _PACK, prod_pod)

    def reason(self, result: LoadFilter, i: int) -> str:
        code = int(result.reason_code[i])
        if code == 1:
            return EXPIRED_REASON
        res = self.names[int(result.failed_resource[i])] if result.failed_resource[i] >= 0 else ""
        if code == 3:
            return f"node(s) {res} usage exceed waterline"
        if code == 2:
            agg = bool(self.agg_used[i]) and not bool(result.prod_pod[i])
            return f"node(s) {res} {'aggregated usage' if agg else 'usage'} exceed threshold"
        return ""

    def reasons(self, result: LoadFilter) -> dict[int, list[str]]:
        return {int(i): [self.reason(result, int(i))] for i in np.flatnonzero(~result.mask)}

    def thresholds_for(self, i: int, estimate: IntArray, *, is_prod: bool) -> NodeThresholds:
        prof = self.profiles[i]
        prod_pod = bool(self.prod_enabled[i]) and is_prod
        if prod_pod:
            kind, thr, load = "prod usage", prof.prod_usage_thresholds, self.load_prod[i]
        elif prof.aggregated is not None:
            kind = f"aggregated usage ({prof.aggregated.aggregation_type}, {prof.aggregated.duration:g}s)"
            thr, load = prof.aggregated.usage_thresholds, self.load_filter[i]
        else:
            kind, thr, load = "usage", prof.usage_thresholds, self.load_filter[i]
        pct = _percent(load + estimate, self.allocatable[i])
        return NodeThresholds(
            kind, prof.source, {r: int(v) for r, v in thr.items() if r in self.names},
            {r: int(c) for r, c in zip(self.names, self.waterline_cap[i].tolist(), strict=True) if c},
            {r: int(p) for r, p in zip(self.names, pct.tolist(), strict=True)})

    def estimated_pods(self, i: int, *, prod: bool) -> list[tuple[str, tuple[int, ...]]]:
        """Read-only, for ``explain``: the pods on node ``i`` whose estimate counts in its filter load, each with
        the amount counted (its estimate above its reported usage), in resource order; the node's load is its
        measured usage plus these."""
        name = self.node_names[i]
        metric = self.metrics.get(name)
        if metric is None:
            return []
        m = metric_load(metric, self.args)
        out: list[tuple[str, tuple[int, ...]]] = []
        for pod in self.cache.pods_on(name):
            load = node_load(metric, (pod,), self.args, m)
            delta = load.prod_delta if prod else load.node_delta
            if delta.any():
                out.append((pod.key, tuple(int(v) for v in delta.tolist())))
        return out

    def filter_load(self, i: int, *, prod: bool) -> tuple[int, ...]:
        """Read-only, for ``explain``: node ``i``'s existing load the filter compares (measured + estimated)."""
        row = self.load_prod[i] if prod else self.load_filter[i]
        return tuple(int(v) for v in row.tolist())

    # ---- score ----------------------------------------------------------------------------------------------------

    def score(self, estimate: IntArray, *, is_prod: bool, rows: IntArray | None = None) -> IntArray:
        """Scores of every node, or of ``rows`` only (each row depends on that node alone)."""
        n = len(self.node_names) if rows is None else len(rows)
        dominant = self.args.dominant_resource_weight
        if n == 0 or not self._weighted:
            return np.zeros(n, dtype=np.int64)
        prod_pod = self.args.score_according_prod_usage and is_prod
        load = self.load_prod if prod_pod else self.load_score
        alloc = self.allocatable
        if rows is not None and len(rows) <= ROW_BY_ROW:
            return np.array(self._score_rows(rows.tolist(), load, estimate.tolist(), self._weight_list),
                            dtype=np.int64)
        valid: BoolArray | None = self._scored()
        if self._valid_all:   # every node's load is read: no score to set to 0
            valid = None
        if rows is not None:
            load, alloc = load[rows], alloc[rows]
            valid = None if valid is None else valid[rows]
        if self._alloc_all_pos:   # no node to leave out: what is free, as a percent (0 when over), in place
            s = alloc - load
            s -= estimate
            np.maximum(s, 0, out=s)
            s *= 100
            s //= alloc
        else:
            used = load + estimate[None, :]
            safe = np.where(alloc > 0, alloc, 1)
            s = np.where((alloc == 0) | (used > alloc), 0, (alloc - used) * 100 // safe)
        total = s @ self.weights   # integer products and sums, exact
        if dominant:
            total = total + dominant * np.minimum(s.min(axis=1, initial=100), 100)
        wsum = self._weight_sum
        if wsum <= 0:
            return np.zeros(n, dtype=np.int64)
        out: IntArray = total // wsum
        if valid is not None:
            out *= valid   # 0 where no load is read
        return out

    def _scored(self) -> BoolArray:
        """The nodes the score reads a load of (a NodeMetric, not expired, with a status), kept until a node's
        status changes."""
        valid = self._valid
        if valid is None:
            valid = self._valid = self.has_metric & ~self.expired & self.has_status
            self._valid_all = bool(valid.all())
        return valid

    def score_rows_of(self, estimate: IntArray, *, is_prod: bool,
                      weight: int = 1) -> Callable[[list[int]], list[int]]:
        """:meth:`score` of some nodes times ``weight``, as Python integers, for the pods of a run with this
        estimate: what depends on the pod alone is worked out once, and a few nodes are scored without arrays."""
        if not self._weighted:
            return lambda at: [0] * len(at)
        prod_pod = self.args.score_according_prod_usage and is_prod
        est, weights = estimate.tolist(), self._weight_list

        def rows(at: list[int]) -> list[int]:
            if len(at) > ROW_BY_ROW:
                scores = self.score(estimate, is_prod=is_prod, rows=np.array(at, dtype=np.intp))
                if weight != 1:
                    scores *= weight
                out: list[int] = scores.tolist()
                return out
            load = self.load_prod if prod_pod else self.load_score
            return [v * weight for v in self._score_rows(at, load, est, weights)]
        return rows

    def _score_rows(self, at: list[int], load: IntArray, est: list[int], weights: list[int]) -> list[int]:
        """The scores of the nodes ``at``, as :meth:`score` computes them for those rows (integers throughout)."""
        dominant = self.args.dominant_resource_weight
        wsum = sum(weights) + dominant
        valid = self._scored()
        out = []
        for i, alloc_row, load_row in zip(at, row_lists(self.allocatable, at), row_lists(load, at), strict=True):
            if not valid[i]:
                out.append(0)
                continue
            s = []
            for a, u, e in zip(alloc_row, load_row, est, strict=True):
                used = u + e
                s.append(0 if a == 0 or used > a else (a - used) * 100 // (a if a > 0 else 1))
            total = sum(v * w for v, w in zip(s, weights, strict=True))
            if dominant:
                total += dominant * min([100, *s])
            out.append(total // wsum if wsum > 0 else 0)
        return out
