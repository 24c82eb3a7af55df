"""binpack: Volcano's bin-packing score (docs/design/scheduler.md §4.9) — fuller nodes score higher, so small jobs leave
whole nodes free for big ones.

Arguments (Volcano's keys): ``binpack.weight`` (default 1; 0 = the plugin registers nothing), ``binpack.cpu``,
``binpack.memory`` (default 1), ``binpack.resources`` (comma list of extra resources) and
``binpack.resources.<name>`` (default 1); negative weights fall back to 1.  Per node the weighted mean of
``(request + used) / allocatable`` over the resources the task requests, × 100 × ``binpack.weight``; a resource
that would overflow zeroes the node.  The score enters the session sum raw; Volcano sums float64 scores, here the
value is truncated to an integer (≤ 1 point of a 0..100 × weight range).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from scheduler.framework.api import TaskInfo
from scheduler.framework.plugin import Arguments, register_plugin
from scheduler.framework.session import Session
from scheduler.scoring.binpack import binpack_score as binpack_formula
from scheduler.scoring.binpack import parse_binpack_arguments

__all__ = ["NAME", "Binpack"]

NAME = "binpack"
# the argument keys this plugin reads (a nested key as parent/child); tests hold the code and docs to it
ARGUMENTS: tuple[str, ...] = ("binpack.weight", "binpack.cpu", "binpack.memory", "binpack.resources")
FloatArray = npt.NDArray[np.float64]


class Binpack:
    name = NAME

    def __init__(self, args: Arguments) -> None:
        self.weights = parse_binpack_arguments(args)
        self.weight = args.score_weight()

    def on_session_open(self, ssn: Session) -> None:
        if self.weights.weight == 0:
            return
        arr = ssn.arrays

        def score(task: TaskInfo) -> FloatArray:
            # Volcano's node-order scores are float64: 50.5 stays 50.5
            out: FloatArray = binpack_formula(task.resreq, arr.columns, arr.allocatable, arr.used, self.weights)
            return out * self.weight

        ssn.add_vector_score_fn(NAME, score)

    def on_session_close(self, ssn: Session) -> None:
        return None


@register_plugin(NAME)
def _build(args: Arguments) -> Binpack:
    return Binpack(args)
