"""balancedallocation: kube's NodeResourcesBalancedAllocation, current formula (docs/design/kube-scoring.md §5).

Prefers nodes whose cpu/memory (and other configured resources) would be used in balanced proportions.  Works on
real requests (no non-zero defaults); the v1.36 score rates the *change* in balance the pod brings
(``50 + (50 + B_with − B_without) // 2``, "no change" = 75); a pod requesting none of the configured resources is
skipped (scores 0 everywhere).  Argument ``resources`` as in kube: ``[{name, weight}]``, default cpu and memory,
every weight must be 1 (the formula ignores weights) and names must not repeat.

:func:`balanced_scores` is shared with ``nodeorder``, which uses Volcano's vendored (≤ v1.35) variant
``B_with`` alone.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from scheduler.framework.api import TaskInfo
from scheduler.framework.plugin import Arguments, register_plugin
from scheduler.framework.session import Session
from scheduler.scoring.balanced import balanced_allocation
from scheduler.scoring.inputs import scoring_inputs
from scheduler.scoring.resource_fit import parse_resource_weights

__all__ = ["NAME", "BalancedAllocation", "balanced_scores"]

NAME = "balancedallocation"
# the argument keys this plugin reads (a nested key as parent/child); tests hold the code and docs to it
ARGUMENTS: tuple[str, ...] = ("resources",)
IntArray = npt.NDArray[np.int64]


def balanced_scores(ssn: Session, task: TaskInfo, names: Sequence[str], *, delta: bool) -> IntArray:
    """0..100 per node (0 for every node when the pod requests none of ``names``)."""
    arr = ssn.arrays
    alloc, node_req, pod_vec, active = scoring_inputs(names, task.pod, arr.columns, arr.allocatable, arr.used,
                                                      arr.nonzero_requested, non_zero=False)
    out = balanced_allocation(alloc, node_req, pod_vec, active, delta=delta)
    return np.zeros(len(ssn.nodes), dtype=np.int64) if out is None else out


class BalancedAllocation:
    name = NAME

    def __init__(self, args: Arguments) -> None:
        resources = parse_resource_weights(args.get("resources"), field="resources", source=f"plugin {NAME}")
        for i, r in enumerate(resources):
            if r.weight != 1:
                raise ValueError(f"plugin {NAME}: resources[{i}].weight: must be 1, got {r.weight}")
        self.names = tuple(r.name for r in resources)
        self.weight = args.score_weight()

    def on_session_open(self, ssn: Session) -> None:
        def score(task: TaskInfo) -> IntArray:
            out: IntArray = balanced_scores(ssn, task, self.names, delta=True) * self.weight
            return out

        ssn.add_vector_score_fn(NAME, score)

    def on_session_close(self, ssn: Session) -> None:
        return None


@register_plugin(NAME)
def _build(args: Arguments) -> BalancedAllocation:
    return BalancedAllocation(args)
