"""tainttoleration: kube's TaintToleration (docs/design/kube-scoring.md §8) on the session.

Filter: the first NoSchedule/NoExecute taint the pod does not tolerate makes the node UnschedulableAndUnresolvable
("node(s) had untolerated taint(s)": evicting pods cannot remove a taint).  Score: the number of untolerated
PreferNoSchedule taints, reverse-normalised over the nodes being scored (fewest → 100), times the plugin weight.

Taints are the same for many nodes, so the nodes are grouped by taint set once per session and a pod's
tolerations are checked once per distinct set.  :class:`TaintCheck` is shared with ``predicates`` and ``nodeorder``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from scheduler.framework.api import TaskInfo
from scheduler.framework.plugin import Arguments, register_plugin
from scheduler.framework.session import Session
from scheduler.framework.status import Code, FilterResult
from scheduler.predicates.groups import NodeGroups
from scheduler.predicates.taints import (
    UNTOLERATED_REASON,
    Taint,
    node_taints,
    taint_counts,
    taint_filter,
    taint_score,
)

__all__ = ["NAME", "TaintCheck", "TaintToleration"]

NAME = "tainttoleration"
# the argument keys this plugin reads (a nested key as parent/child); tests hold the code and docs to it
ARGUMENTS: tuple[str, ...] = ()
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]
_MEMO_KEY = "taints.by-tolerations"
# distinct toleration sets kept at most (then the memo starts afresh): bounds memory whatever pods come and go
_MAX_TOLERATION_SETS = 4096


class TaintCheck:
    """Per session: the nodes grouped by taint set."""

    def __init__(self, ssn: Session) -> None:
        self.ssn = ssn
        views = ssn.node_views()
        # the grouping only changes with the node objects: later sessions over the same nodes reuse it
        self.groups: NodeGroups[tuple[Taint, ...]] = ssn.memo.for_objects(
            "taint-groups", views, lambda: NodeGroups([node_taints(v) for v in views]))

    def _per_pod(self, task: TaskInfo) -> list[Any]:
        """[filter, counts] of the pod's tolerations, which is all they depend on: kept per distinct tolerations (a
        few per cluster, not a node-length array per pod) while the node grouping is the same object."""
        kept: tuple[object, dict[str, list[Any]]] | None = self.ssn.memo.value(_MEMO_KEY)
        if kept is None or kept[0] is not self.groups or len(kept[1]) >= _MAX_TOLERATION_SETS:
            kept = (self.groups, {})
            self.ssn.memo.set_value(_MEMO_KEY, kept)
        key = repr(task.pod.tolerations)   # equal tolerations written alike share an entry
        got = kept[1].get(key)
        if got is None:
            got = kept[1][key] = [None, None]
        return got

    def passes(self, task: TaskInfo) -> BoolArray:
        got = self._per_pod(task)
        if got[0] is None:
            mask = taint_filter(self.groups, task.pod.tolerations)
            mask.flags.writeable = False
            got[0] = mask
        out: BoolArray = got[0]
        return out

    def filter(self, task: TaskInfo) -> FilterResult:
        return FilterResult(self.passes(task), default=(Code.UNRESOLVABLE, UNTOLERATED_REASON))

    def score(self, task: TaskInfo) -> IntArray:
        """0..100 per node, normalised over the nodes being scored (0 elsewhere)."""
        got = self._per_pod(task)
        if got[1] is None:
            counts = taint_counts(self.groups, task.pod.tolerations)
            counts.flags.writeable = False
            got[1] = counts
        return taint_score(self.groups, task.pod.tolerations, self.ssn.scoring_mask(), counts=got[1])


class TaintToleration:
    name = NAME

    def __init__(self, args: Arguments) -> None:
        self.weight = args.score_weight()

    def on_session_open(self, ssn: Session) -> None:
        check = TaintCheck(ssn)

        def score(task: TaskInfo) -> IntArray:
            out: IntArray = check.score(task) * self.weight
            return out

        ssn.add_vector_predicate_fn(NAME, check.filter)
        ssn.add_vector_score_fn(NAME, score)

    def on_session_close(self, ssn: Session) -> None:
        return None


@register_plugin(NAME)
def _build(args: Arguments) -> TaintToleration:
    return TaintToleration(args)
