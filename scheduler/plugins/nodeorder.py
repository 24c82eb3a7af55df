"""nodeorder: Volcano's weighted sum of kube-scheduler scorers (docs/design/scheduler.md §4.8).

Arguments (weights; 0 disables a scorer): ``leastrequested.weight`` 1, ``mostrequested.weight`` 0,
``balancedresource.weight`` 1, ``nodeaffinity.weight`` 2, ``podaffinity.weight`` 2, ``tainttoleration.weight`` 3,
``imagelocality.weight`` 1, ``podtopologyspread.weight`` 2.  Each scorer gives 0..100 per node (normalised over
the nodes being scored where kube normalises), is multiplied by its weight, and the plugin adds the sum raw to the
other plugins' scores.

* leastrequested / mostrequested: kube's LeastAllocated / MostAllocated over cpu:1, memory:1 with the non-zero
  request defaults (100m / 200Mi per container without requests);
* balancedresource: BalancedAllocation as Volcano vendors it (≤ v1.35: the balance with the pod, not its change)
  over cpu, memory and nvidia.com/gpu (a resource the pod does not request is skipped);
* nodeaffinity, tainttoleration, podaffinity (``hardPodAffinityWeight`` 1), podtopologyspread (the pod's
  ScheduleAnyway constraints, else the system defaults) — the standalone plugins' scorers;
* imagelocality: kube's ImageLocality from the images nodes report in ``status.images`` — per container image
  present on a node, its size × (nodes having it / all nodes), summed, clamped to 23 MiB .. 1000 MiB × containers
  and scaled to 0..100.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence

import numpy as np
import numpy.typing as npt

from common.objects import NodeView, PodView
from scheduler.framework.api import TaskInfo
from scheduler.framework.arrays import carried_caches
from scheduler.framework.plugin import Arguments, register_plugin
from scheduler.framework.runs import RowFn, RowsSince, SplitRows, accounting_alone
from scheduler.framework.session import Session
from scheduler.predicates.taints import taint_counts
from scheduler.scoring.balanced import ROW_BY_ROW as BALANCED_ROW_BY_ROW
from scheduler.scoring.balanced import balance_ref, balance_two_columns, balanced_allocation
from scheduler.scoring.cpumemory import BALANCED, CpuMemoryScores, WeightedScorer
from scheduler.scoring.inputs import ColumnInputs, PodRows, RowInputs, scoring_inputs, scoring_rows
from scheduler.scoring.nodeorder import NodeOrderWeights, parse_nodeorder_arguments
from scheduler.scoring.resource_fit import (
    LEAST_ALLOCATED,
    MAX_NODE_SCORE,
    MOST_ALLOCATED,
    ScoringStrategy,
    counts_for,
)

from .interpodaffinity import InterPodAffinityCheck, PodTerms, names_terms
from .nodeaffinity import AffinityCheck
from .noderesources import ComputeOf, strategy_compute
from .podtopologyspread import SYSTEM_DEFAULT_CONSTRAINTS, SpreadCheck
from .tainttoleration import TaintCheck

__all__ = ["NAME", "NodeOrder", "ImageLocality", "normalized_image_name"]

NAME = "nodeorder"
# the argument keys this plugin reads (a nested key as parent/child); tests hold the code and docs to it
ARGUMENTS: tuple[str, ...] = (
    "leastrequested.weight", "mostrequested.weight", "balancedresource.weight", "nodeaffinity.weight",
    "podaffinity.weight", "tainttoleration.weight", "imagelocality.weight", "podtopologyspread.weight",
)
IntArray = npt.NDArray[np.int64]
Scorer = Callable[[TaskInfo], IntArray]
GPU = "nvidia.com/gpu"
BALANCED_RESOURCES = ("cpu", "memory", GPU)
# the resource scorers' kinds for CpuMemoryScores
_KINDS = {"leastrequested": LEAST_ALLOCATED, "mostrequested": MOST_ALLOCATED, "balancedresource": BALANCED}
MB = 1024 * 1024
MIN_IMAGE_THRESHOLD = 23 * MB
MAX_CONTAINER_IMAGE_THRESHOLD = 1000 * MB
# SessionMemo key of the image sizes the sessions share while their node views are the same
_IMAGES_KEY = "nodeorder.images"
# SessionMemo key (carried) of what the rows read of every Node object as the previous claiming session opened
_VIEWS_KEY = "nodeorder.views"


def normalized_image_name(name: str) -> str:
    """kube's normalisation: an image without a tag (or digest) means ``:latest``."""
    return name if name.rfind(":") > name.rfind("/") else f"{name}:latest"


class ImageLocality:
    """For every image some node reports, its size on each node that has it.  It depends on the node views alone:
    sessions share one while their views are the very same objects (:meth:`of`)."""

    def __init__(self, views: Sequence[NodeView]) -> None:
        self.n = len(views)
        self.sizes: dict[str, IntArray] = {}
        self._by_images: dict[tuple[str, ...], IntArray] = {}
        for i, view in enumerate(views):
            for image in (view.raw.get("status") or {}).get("images") or []:
                try:
                    size = int(image.get("sizeBytes") or 0)
                except (TypeError, ValueError):
                    continue
                for name in image.get("names") or []:
                    arr = self.sizes.setdefault(normalized_image_name(str(name)), np.zeros(self.n, dtype=np.int64))
                    arr[i] = max(int(arr[i]), size)

    @classmethod
    def of(cls, ssn: Session) -> ImageLocality:
        """The session's: the one the session memo holds for the same node views, or made anew."""
        views = ssn.node_views()
        got: ImageLocality = ssn.memo.for_objects(_IMAGES_KEY, views, lambda: cls(views))
        return got

    @staticmethod
    def _images(pod: PodView) -> list[str]:
        spec = pod.raw.get("spec") or {}
        return [str(c.get("image", "")) for c in [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]]

    def score(self, task: TaskInfo) -> IntArray:
        """The scores of every node; they depend on the pod's images alone (the nodes' images are the session's), so
        pods with the same images share them."""
        images = tuple(self._images(task.pod))
        got = self._by_images.get(images)
        if got is None:
            got = self._by_images[images] = self._score(images)
            got.flags.writeable = False
        return got

    def _score(self, images: Sequence[str]) -> IntArray:
        total = np.zeros(self.n, dtype=np.int64)
        if not images or not self.n:
            return total
        for image in images:
            sizes = self.sizes.get(normalized_image_name(image))
            if sizes is None:
                continue
            spread = float(np.count_nonzero(sizes)) / float(self.n)
            total += (sizes.astype(np.float64) * spread).astype(np.int64)
        hi = MAX_CONTAINER_IMAGE_THRESHOLD * len(images)
        clamped = np.clip(total, MIN_IMAGE_THRESHOLD, hi)
        return (100 * (clamped - MIN_IMAGE_THRESHOLD) // (hi - MIN_IMAGE_THRESHOLD)).astype(np.int64)


def _balanced_compute(ssn: Session) -> tuple[ComputeOf, PartRows]:
    """BalancedAllocation's row-local computation for a pod, as a row cache takes it (it reads the node arrays'
    allocatable, used and non-zero requested rows, the resource columns and the pod's requests), and its scores on
    some nodes for a run of a pod, node by node with the scalar reference."""
    arr = ssn.arrays
    two = _TwoKept(arr.columns, arr.allocatable)

    def compute_of(task: TaskInfo) -> Callable[[IntArray | None], IntArray]:
        columns = two.of(task.pod)
        # the column form costs less than the scalar reference's from two nodes on
        by_row = 1 if columns is not None else BALANCED_ROW_BY_ROW

        def compute(rows: IntArray | None) -> IntArray:
            if rows is not None and len(rows) <= by_row:
                return _balanced_rows(scoring_rows(BALANCED_RESOURCES, task.pod, arr.columns, arr.allocatable,
                                                   arr.used, arr.nonzero_requested, rows.tolist(), non_zero=False))
            if columns is not None:
                pod = columns.pod_request(task.pod)
                if not any(pod):   # requests none of them: no score (balanced_allocation's None)
                    return np.zeros(len(arr) if rows is None else len(rows), dtype=np.int64)
                alloc_cols, req_cols = columns.read(arr.allocatable, arr.used, arr.nonzero_requested, rows)
                return balance_two_columns(alloc_cols, req_cols, pod)
            sel = slice(None) if rows is None else rows
            alloc, node_req, pod_vec, active = scoring_inputs(
                BALANCED_RESOURCES, task.pod, arr.columns, arr.allocatable[sel], arr.used[sel],
                arr.nonzero_requested[sel], non_zero=False)
            out = balanced_allocation(alloc, node_req, pod_vec, active, delta=False)
            return np.zeros(alloc.shape[0], dtype=np.int64) if out is None else out
        return compute

    def rows_of(task: TaskInfo) -> RowFn:
        pod = PodRows(BALANCED_RESOURCES, task.pod, arr.columns, non_zero=False)
        if not any(p != 0 for p, on in zip(pod.pod_request, pod.active, strict=True) if on):
            return _zeros   # a pod requesting none of the resources: 0 on every node

        compute = compute_of(task)

        def rows(at: list[int]) -> list[int]:
            if len(at) > 1:   # the vector form (node by node itself up to where that costs less)
                vector: list[int] = compute(np.array(at, dtype=np.int64)).tolist()
                return vector
            # balance_ref skips allocatable 0 as with_pod does
            return [balance_ref([(a, r) for a, r, _ in pod.with_pod(arr.allocatable, arr.used,
                                                                     arr.nonzero_requested, i)])
                    for i in at]
        return rows
    return compute_of, rows_of


def _resource_sum(ssn: Session, parts: Sequence[tuple[str, int, ComputeOf]]) -> Summand:
    """The resource scorers (least and most requested, balanced allocation), each times its weight and summed, as
    one summand kept in one row cache per pod requests and non-zero requests: a pod's changed nodes are read and
    computed anew once for all of them, and the sum takes one vector in, not one per scorer.  Carried from session
    to session (it reads the node arrays' rows, and besides them the scorers, their weights and the resource
    columns)."""
    arr = ssn.arrays
    ident = (tuple((name, weight) for name, weight, _ in parts), tuple(arr.columns))
    (memo,) = carried_caches(ssn.memo, f"{NAME}.resources", arr, ident, arr.row_inputs(), renewing=ssn.renewing)

    def summand(task: TaskInfo) -> IntArray:
        computes = [(weight, compute_of(task)) for _, weight, compute_of in parts]

        def compute(rows: IntArray | None) -> IntArray:
            total: IntArray | None = None
            for weight, part in computes:
                s = part(rows)
                if weight != 1:
                    s = s * weight
                total = s if total is None else total + s   # new arrays: no scorer's own values changed
            assert total is not None
            return total
        # read-only, valid until the next pod's: the weighted sum takes the scores in at once
        return memo.read((task.pod.requests, task.pod.nonzero_requests), compute)
    return summand


class _TwoKept:
    """The session's column inputs of BalancedAllocation per pod request, where the resources that count for the pod
    are two kept on every node (the usual cpu and memory; ``balance_two_columns``), else None."""

    def __init__(self, columns: Sequence[str], allocatable: IntArray) -> None:
        self.columns = columns
        self.allocatable = allocatable
        self._by_names: dict[tuple[str, ...], ColumnInputs | None] = {}

    def of(self, pod: PodView) -> ColumnInputs | None:
        names = tuple(r for r in BALANCED_RESOURCES if counts_for(r, pod.requests))
        if names not in self._by_names:
            inputs = ColumnInputs(names, self.columns, self.allocatable, non_zero=False)
            self._by_names[names] = inputs if len(names) == 2 and inputs.usable else None
        return self._by_names[names]


def _balanced_rows(rows: RowInputs) -> IntArray:
    """``balanced_allocation(..., delta=False)`` of a few nodes with the scalar reference (0 for a pod requesting
    none of the resources), as the vector form's row-by-row path computes them."""
    pod, on = rows.pod_request, rows.active
    if not any(p != 0 for p, o in zip(pod, on, strict=True) if o):
        return np.zeros(len(rows.allocatable), dtype=np.int64)
    return np.array([balance_ref([(a, r + p) for a, r, p, o in zip(alloc, req, pod, on, strict=True) if o])
                     for alloc, req in zip(rows.allocatable, rows.requested, strict=True)], dtype=np.int64)


class OnMask:
    """A summand's scores when they are MAX_NODE_SCORE on the nodes of ``mask`` and 0 elsewhere: the weighted sum
    adds the weighted maximum where the mask holds, in one pass, instead of making the scores and their product."""

    __slots__ = ("mask",)

    def __init__(self, mask: npt.NDArray[np.bool_]) -> None:
        self.mask = mask


# what a scorer adds to nodeorder's sum for a pod: its scores, or None when they are 0 on every node
Summand = Callable[[TaskInfo], IntArray | OnMask | None]
# a summand's scores on some nodes for a pod (``runs.RowsOf``): None unless each node's score depends on that node
# alone while only pods like it are placed, and not on which nodes are scored (or is such a part plus one made anew
# per pod: ``SplitRows``)
PartRows = Callable[[TaskInfo], RowFn | SplitRows | None]


def _resource_rows(ssn: Session, resources: Sequence[tuple[str, int, ComputeOf, PartRows]]) -> PartRows:
    """The resource scorers' weighted sum on some nodes for a run of a pod, as one part: one node through each
    scorer's own rows (their scalar references), more in one computation over cpu and memory where every scorer
    reads those two alone (:class:`CpuMemoryScores`; balanced allocation reads a GPU the pod requests), else each
    scorer's vector form, summed (integers: the same sum in any order)."""
    arr = ssn.arrays
    sums = (CpuMemoryScores([WeightedScorer(_KINDS[name], weight) for name, weight, _, _ in resources], arr.columns,
                            arr.allocatable, arr.used, arr.nonzero_requested)
            if CpuMemoryScores.usable(arr.columns, arr.allocatable) else None)
    balanced = any(name == "balancedresource" for name, _, _, _ in resources)

    def rows_of(task: TaskInfo) -> RowFn | None:
        fns: list[tuple[int, RowFn]] = []
        for _, weight, _, part in resources:
            fn = part(task)
            if fn is None or isinstance(fn, SplitRows):   # not a resource scorer's answer: the per-pod path
                return None
            fns.append((weight, fn))
        fused = (sums.of(task.pod) if sums is not None and not (balanced and counts_for(GPU, task.pod.requests))
                 else None)
        computes = [(weight, compute_of(task)) for _, weight, compute_of, _ in resources] if fused is None else []

        def rows(at: list[int]) -> list[int]:
            if len(at) == 1:
                value = 0
                for weight, fn in fns:
                    value += weight * fn(at)[0]
                return [value]
            idx = np.array(at, dtype=np.intp)
            if fused is not None:
                out: list[int] = fused.rows(idx).tolist()
                return out
            total = np.zeros(len(at), dtype=np.int64)
            for weight, compute in computes:
                total += compute(idx) * weight
            summed: list[int] = total.tolist()
            return summed
        return rows
    return rows_of


def _zeros(at: list[int]) -> list[int]:
    return [0] * len(at)


def _full(at: list[int]) -> list[int]:
    return [MAX_NODE_SCORE] * len(at)


def _affinity_parts(ssn: Session) -> tuple[Scorer, Summand, PartRows]:
    """NodeAffinity's scorer, and its summand: nothing for a pod without preferred terms (no node scores above 0,
    and the normalised scores are then 0 on every node); a pod with preferred terms is normalised: made anew per
    pod (its rows are 0)."""
    check = AffinityCheck(ssn)
    rest = SplitRows(_zeros, check.score)

    def summand(task: TaskInfo) -> IntArray | None:
        return check.score(task) if check.raw_score(task.pod).any() else None
    return check.score, summand, lambda task: rest if check.raw_score(task.pod).any() else _zeros


def _taint_parts(ssn: Session) -> tuple[Scorer, Summand, PartRows]:
    """TaintToleration's scorer, and its summand: for tolerations that leave no PreferNoSchedule taint of any node
    untolerated, the normalised score is 100 on every node scored and 0 elsewhere, read off the mask; the answer
    is kept per toleration set for the session.  Other tolerations' normalised scores are made anew per pod."""
    check = TaintCheck(ssn)
    rest = SplitRows(_zeros, check.score)
    untainted: dict[str, bool] = {}

    def clear(task: TaskInfo) -> bool:
        key = repr(task.pod.tolerations)
        got = untainted.get(key)
        if got is None:
            got = untainted[key] = not taint_counts(check.groups, task.pod.tolerations).any()
        return got

    def summand(task: TaskInfo) -> IntArray | OnMask | None:
        return OnMask(ssn.scoring_mask()) if clear(task) else check.score(task)
    return check.score, summand, lambda task: _full if clear(task) else rest


def _image_parts(ssn: Session) -> tuple[Scorer, Summand, PartRows]:
    """ImageLocality's scorer, and its summand: nothing when no node reports an image (every score is 0); the
    scores depend on the pod's images and the session's nodes alone."""
    images = ImageLocality.of(ssn)
    if not images.sizes:
        return images.score, _nothing, lambda task: _zeros

    def rows_of(task: TaskInfo) -> RowFn:
        scores = images.score(task)
        return lambda at: [int(scores[i]) for i in at]
    return images.score, images.score, rows_of


def _pod_affinity_parts(ssn: Session) -> tuple[Scorer, Summand, PartRows]:
    """InterPodAffinity's scorer, and its summand: nothing for a pod without affinity terms while no pod placed
    has any (kube's PreScore skips the pod; placing such pods adds none)."""
    check = InterPodAffinityCheck(ssn)

    def rows_of(task: TaskInfo) -> RowFn | None:
        terms = check.terms_of(task.uid, task.pod)
        if terms is None or check.index.with_affinity or terms != PodTerms():
            return None
        return _zeros

    def summand(task: TaskInfo) -> IntArray | None:
        return None if rows_of(task) is _zeros else check.score(task)
    return check.score, summand, rows_of


def _spread_parts(ssn: Session) -> tuple[Scorer, Summand, PartRows]:
    """PodTopologySpread's scorer (the pod's ScheduleAnyway constraints, else the system defaults): 0 on every
    node for a pod without such constraints; the others are normalised, so made anew for each pod."""
    check = SpreadCheck(ssn, SYSTEM_DEFAULT_CONSTRAINTS, True)
    rest = SplitRows(_zeros, check.score)

    def rows_of(task: TaskInfo) -> RowFn | SplitRows | None:
        try:
            cons, _ = check.constraints(task)
        except (ValueError, TypeError):
            return None
        return rest if any(not c.spec.hard for c in cons) else _zeros
    return check.score, check.score, rows_of


def _labels_key(spread: PartRows | None) -> Callable[[TaskInfo], Hashable]:
    """What the plugin's rows read of a pod's labels: only whether the default spreading applies to it (it then
    gives its part made anew per pod, which reads the rest; no other part reads the labels)."""

    def key(task: TaskInfo) -> Hashable:
        got = spread(task) if spread is not None else _zeros
        return None if got is None else isinstance(got, SplitRows)
    return key


def _rows_since(ssn: Session) -> RowsSince:
    """The rows' changes since the previous session: besides the node accounting, the rows read of the Node objects
    only what every node shares — the distinct taint sets (whether any node has a PreferNoSchedule taint a pod does
    not tolerate) and the images nodes report (how many nodes have each).  While the taint sets are those the
    previous claiming session opened with and no node reports an image, a Node object changing changes no row;
    else it may change every node's."""
    key = (frozenset(TaintCheck(ssn).groups.keys), bool(ImageLocality.of(ssn).sizes))
    previous = ssn.memo.carried(_VIEWS_KEY) if ssn.renewing else None
    if ssn.renewing:
        ssn.memo.carry(_VIEWS_KEY, key)
    shared = previous == key and not key[1]

    def rows_since(views_moved: bool) -> IntArray | None:
        return accounting_alone(views_moved) if shared or not views_moved else None
    return rows_since


def _nothing(task: TaskInfo) -> IntArray | None:
    return None


def _every_node(compute_of: ComputeOf) -> Scorer:
    """A row-local computation's scores of every node for a pod, made anew."""
    return lambda task: compute_of(task)(None)


def _weighted_rows(parts: Sequence[tuple[int, PartRows]], plugin_weight: int) -> PartRows:
    """:func:`_weighted_sum` on some nodes, when every part gives its rows for the pod (integers: the same sum); a
    part that is 0 or 100 on every node is added as a constant, not asked."""

    def rows_of(task: TaskInfo) -> RowFn | SplitRows | None:
        fns: list[tuple[int, RowFn]] = []
        rests: list[tuple[int, Callable[[TaskInfo], IntArray]]] = []
        for weight, part in parts:
            fn = part(task)
            if fn is None:   # the parts that may say so first: nothing else asked
                return None
            if isinstance(fn, SplitRows):
                rests.append((weight * plugin_weight, fn.rest))
                fn = fn.rows
            fns.append((weight, fn))
        constant = sum(weight * MAX_NODE_SCORE for weight, fn in fns if fn is _full)
        declared = [(weight, fn) for weight, fn in fns if fn is not _zeros and fn is not _full]

        def rows(at: list[int]) -> list[int]:
            total = [constant] * len(at)
            for weight, fn in declared:
                total = [t + v * weight for t, v in zip(total, fn(at), strict=True)]
            return [t * plugin_weight for t in total]
        return SplitRows(rows, _weighted_rests(rests)) if rests else rows
    return rows_of


def _weighted_rests(rests: Sequence[tuple[int, Callable[[TaskInfo], IntArray]]]) -> Callable[[TaskInfo], IntArray]:
    """The parts made anew per pod, each times its weight (the plugin's included), summed in int64."""

    def rest(task: TaskInfo) -> IntArray:
        total: IntArray | None = None
        for weight, fn in rests:
            part = np.multiply(fn(task), weight, dtype=np.int64)
            total = part if total is None else total + part
        assert total is not None
        return total
    return rest


def _add_times(total: IntArray, scores: IntArray, weight: int) -> None:
    """``total += scores * weight`` in int64, a weight of 1 or 2 as one or two additions (no product made)."""
    if weight in (1, 2):
        total += scores
        if weight == 2:
            total += scores
    else:
        total += scores * weight


def _weighted_sum(summed: Sequence[tuple[int, Summand]], plugin_weight: int, n: int) -> Scorer:
    """The plugin's score: each summand times its weight, summed, times the plugin's weight, in int64 (a weight of
    1 multiplies nothing).  Integer sums come out the same in any order, so the sum starts from the products of the
    :class:`OnMask` summands (their weighted maximum where their mask holds: a product of the mask, cheaper than an
    addition restricted to it), else from the first summand's product, and adds the others in place."""

    def score(task: TaskInfo) -> IntArray:
        got = [(weight, s) for weight, summand in summed if (s := summand(task)) is not None]
        total: IntArray | None = None
        for weight, s in got:
            if isinstance(s, OnMask):
                part = np.multiply(s.mask, MAX_NODE_SCORE * weight, dtype=np.int64)
                total = part if total is None else np.add(total, part, out=total)
        for weight, s in got:
            if isinstance(s, OnMask):
                continue
            if total is None:
                total = np.array(s, dtype=np.int64) if weight == 1 else np.multiply(s, weight, dtype=np.int64)
            else:
                _add_times(total, s, weight)
        if total is None:
            return np.zeros(n, dtype=np.int64)
        if plugin_weight != 1:
            total *= plugin_weight
        return total
    return score


class NodeOrder:
    name = NAME

    def __init__(self, args: Arguments) -> None:
        self.weights: NodeOrderWeights = parse_nodeorder_arguments(args)
        self.weight = args.score_weight()
        # this session's scorers: (argument name, weight, scorer); ``explain`` shows each one's score and weight
        self.parts: list[tuple[str, int, Scorer]] = []

    def on_session_open(self, ssn: Session) -> None:
        w = self.weights
        resource_builders: list[tuple[str, int, Callable[[], tuple[ComputeOf, PartRows]]]] = [
            ("leastrequested", w.least_requested, lambda: strategy_compute(ssn, ScoringStrategy(LEAST_ALLOCATED))),
            ("mostrequested", w.most_requested, lambda: strategy_compute(ssn, ScoringStrategy(MOST_ALLOCATED))),
            ("balancedresource", w.balanced_resource, lambda: _balanced_compute(ssn)),
        ]
        builders: list[tuple[str, int, Callable[[], tuple[Scorer, Summand, PartRows]]]] = [
            ("nodeaffinity", w.node_affinity, lambda: _affinity_parts(ssn)),
            ("podaffinity", w.pod_affinity, lambda: _pod_affinity_parts(ssn)),
            ("tainttoleration", w.taint_toleration, lambda: _taint_parts(ssn)),
            ("imagelocality", w.image_locality, lambda: _image_parts(ssn)),
            ("podtopologyspread", w.pod_topology_spread, lambda: _spread_parts(ssn)),
        ]
        resources = [(name, weight, build()) for name, weight, build in resource_builders if weight]
        built = [(name, weight, build()) for name, weight, build in builders if weight]
        # explain's scores of each resource scorer are computed anew over every node (what its share of the kept
        # sum holds), in the configured order
        self.parts = [(name, weight, _every_node(compute_of)) for name, weight, (compute_of, _) in resources]
        self.parts += [(name, weight, scorer) for name, weight, (scorer, _, _) in built]
        summed = [(1, _resource_sum(ssn, [(name, weight, compute_of) for name, weight, (compute_of, _) in resources]))
                  ] if resources else []
        summed += [(weight, summand) for _, weight, (_, summand, _) in built]
        if summed:
            parts = [(name, weight, part) for name, weight, (_, _, part) in built]
            if resources:   # one part for the run's rows: the scorers' weighted sum
                parts.append(("resources", 1, _resource_rows(ssn, [(name, weight, compute_of, part) for
                                                                   name, weight, (compute_of, part) in resources])))
            # the integer sum's order is free: the parts that may leave the pod to the per-pod path are asked first
            asked = sorted(parts, key=lambda b: b[0] not in ("podaffinity", "podtopologyspread"))
            rows = _weighted_rows([(weight, part) for _, weight, part in asked], self.weight)
            spread = [part for name, _, (_, _, part) in built if name == "podtopologyspread"]
            ssn.add_vector_score_fn(NAME, _weighted_sum(summed, self.weight, len(ssn.nodes)), rows=rows,
                                    rows_key=_labels_key(spread[0] if spread else None),
                                    rows_moved=lambda task: names_terms(task.pod), rows_since=_rows_since(ssn))

    def on_session_close(self, ssn: Session) -> None:
        self.parts = []


@register_plugin(NAME)
def _build(args: Arguments) -> NodeOrder:
    return NodeOrder(args)
