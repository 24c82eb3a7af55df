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

from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt

from common.objects import PodView
from scheduler.framework.api import TaskInfo
from scheduler.framework.arrays import RowCache
from scheduler.framework.plugin import Arguments, register_plugin
from scheduler.framework.session import Session
from scheduler.scoring.balanced import ROW_BY_ROW as BALANCED_ROW_BY_ROW
from scheduler.scoring.balanced import balance_ref, balanced_allocation
from scheduler.scoring.inputs import RowInputs, scoring_inputs, scoring_rows
from scheduler.scoring.nodeorder import NodeOrderWeights, parse_nodeorder_arguments
from scheduler.scoring.resource_fit import LEAST_ALLOCATED, MOST_ALLOCATED, ScoringStrategy

from .interpodaffinity import InterPodAffinityCheck
from .nodeaffinity import AffinityCheck
from .noderesources import strategy_scorer
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
BALANCED_RESOURCES = ("cpu", "memory", "nvidia.com/gpu")
MB = 1024 * 1024
MIN_IMAGE_THRESHOLD = 23 * MB
MAX_CONTAINER_IMAGE_THRESHOLD = 1000 * MB


def normalized_image_name(name: str) -> str:
    """kube's normalisation: an image without a tag (or digest) means ``:latest``."""
    return name if name.rfind(":") > name.rfind("/") else f"{name}:latest"


class ImageLocality:
    """Per session: for every image some node reports, its size on each node that has it."""

    def __init__(self, ssn: Session) -> None:
        self.n = len(ssn.nodes)
        self.sizes: dict[str, IntArray] = {}
        self._by_images: dict[tuple[str, ...], IntArray] = {}
        for i, nd in enumerate(ssn.nodes):
            for image in (nd.view.raw.get("status") or {}).get("images") or []:
                try:
                    size = int(image.get("sizeBytes") or 0)
                except (TypeError, ValueError):
                    continue
                for name in image.get("names") or []:
                    arr = self.sizes.setdefault(normalized_image_name(str(name)), np.zeros(self.n, dtype=np.int64))
                    arr[i] = max(int(arr[i]), size)

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


def _balanced_scorer(ssn: Session) -> Scorer:
    arr = ssn.arrays
    memo = RowCache(arr)

    def score(task: TaskInfo) -> IntArray:
        def compute(rows: IntArray | None) -> IntArray:
            if rows is not None and len(rows) <= BALANCED_ROW_BY_ROW:
                return _balanced_rows(scoring_rows(BALANCED_RESOURCES, task.pod, arr.columns, arr.allocatable,
                                                   arr.used, arr.nonzero_requested, rows.tolist(), non_zero=False))
            sel = slice(None) if rows is None else rows
            alloc, node_req, pod_vec, active = scoring_inputs(
                BALANCED_RESOURCES, task.pod, arr.columns, arr.allocatable[sel], arr.used[sel],
                arr.nonzero_requested[sel], non_zero=False)
            out = balanced_allocation(alloc, node_req, pod_vec, active, delta=False)
            return np.zeros(alloc.shape[0], dtype=np.int64) if out is None else out
        return memo.get(task.pod.requests, compute)
    return score


def _balanced_rows(rows: RowInputs) -> IntArray:
    """``balanced_allocation(..., delta=False)`` of a few nodes with the scalar reference (0 for a pod requesting
    none of the resources), as the vector form's row-by-row path computes them."""
    pod, on = rows.pod_request, rows.active
    if not any(p != 0 for p, o in zip(pod, on, strict=True) if o):
        return np.zeros(len(rows.allocatable), dtype=np.int64)
    return np.array([balance_ref([(a, r + p) for a, r, p, o in zip(alloc, req, pod, on, strict=True) if o])
                     for alloc, req in zip(rows.allocatable, rows.requested, strict=True)], dtype=np.int64)


def _weighted_sum(summed: Sequence[tuple[int, Scorer]], plugin_weight: int, n: int) -> Scorer:
    """The plugin's score: each scorer times its weight, summed, times the plugin's weight, in int64 (a weight of
    1 multiplies nothing; the first product is the sum's start, not added to zeros)."""
    if not summed:
        return lambda task: np.zeros(n, dtype=np.int64)
    (first_weight, first), rest = summed[0], summed[1:]

    def score(task: TaskInfo) -> IntArray:
        total: IntArray = np.multiply(first(task), first_weight, dtype=np.int64)
        for weight, scorer in rest:
            if weight == 1:
                total += scorer(task)
            else:
                total += scorer(task) * weight
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
        images: list[ImageLocality] = []   # made only with a weight

        def image_scorer() -> Scorer:
            images.append(ImageLocality(ssn))
            return images[0].score

        builders: list[tuple[str, int, Callable[[], Scorer]]] = [
            ("leastrequested", w.least_requested, lambda: strategy_scorer(ssn, ScoringStrategy(LEAST_ALLOCATED))),
            ("mostrequested", w.most_requested, lambda: strategy_scorer(ssn, ScoringStrategy(MOST_ALLOCATED))),
            ("balancedresource", w.balanced_resource, lambda: _balanced_scorer(ssn)),
            ("nodeaffinity", w.node_affinity, lambda: AffinityCheck(ssn).score),
            ("podaffinity", w.pod_affinity, lambda: InterPodAffinityCheck(ssn).score),
            ("tainttoleration", w.taint_toleration, lambda: TaintCheck(ssn).score),
            ("imagelocality", w.image_locality, image_scorer),
            ("podtopologyspread", w.pod_topology_spread,
             lambda: SpreadCheck(ssn, SYSTEM_DEFAULT_CONSTRAINTS, True).score),
        ]
        self.parts = parts = [(name, weight, build()) for name, weight, build in builders if weight]
        if not parts:
            return
        # what the sum adds: image locality scores 0 on every node for every pod when no node reports an image
        summed = [(weight, scorer) for name, weight, scorer in parts
                  if name != "imagelocality" or images[0].sizes]
        ssn.add_vector_score_fn(NAME, _weighted_sum(summed, self.weight, len(ssn.nodes)))

    def on_session_close(self, ssn: Session) -> None:
        self.parts = []


@register_plugin(NAME)
def _build(args: Arguments) -> NodeOrder:
    return NodeOrder(args)
