"""nodegroup: queues bound to groups of nodes (label ``volcano.sh/nodegroup-name``) by required/preferred affinity
and anti-affinity, with optional per-group quotas (docs/design/scheduler.md §4.13).

Evaluated per distinct node group, not per node: at session open every node gets a group index, and each queue's
pass mask, reasons and scores are computed once per group and broadcast to the nodes.  The per-group quota
(queue annotation ``volcano.sh/nodegroup-resource-limits``) is checked against what the queue's tasks already hold
in that group, kept current by event handlers.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from common.resources import Resources
from scheduler.batch.args import NodeGroupArgs
from scheduler.batch.nodegroup import (
    NODEGROUP_LABEL,
    GroupAffinity,
    group_predicate,
    group_quota_exceeded,
    group_score,
    parse_group_affinity,
    parse_group_limits,
)
from scheduler.framework.api import ALLOCATED_STATUS, QueueInfo, TaskInfo
from scheduler.framework.plugin import Arguments, register_plugin
from scheduler.framework.session import EventHandler, Session
from scheduler.framework.status import Code, FilterResult

__all__ = ["NodeGroup"]

NAME = "nodegroup"
# the argument keys this plugin reads (a nested key as parent/child); tests hold the code and docs to it
ARGUMENTS: tuple[str, ...] = ("strict", "enablePreferredOrder")
log = logging.getLogger(__name__)
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]


@dataclass(frozen=True, slots=True)
class _QueueView:
    """A queue's per-node answer, computed once per session."""

    passed: BoolArray
    reasons: dict[int, list[tuple[Code, str]]]
    score: IntArray
    limits: Mapping[str, Resources]


def _spec_affinity(queue: QueueInfo) -> Mapping[str, Any] | None:
    if queue.view is None:
        return None
    aff = (queue.view.raw.get("spec") or {}).get("affinity")
    return aff if isinstance(aff, Mapping) else None


def _annotations(queue: QueueInfo) -> Mapping[str, str]:
    if queue.view is None:
        return {}
    return (queue.view.raw.get("metadata") or {}).get("annotations") or {}


class NodeGroup:
    name = NAME

    def __init__(self, args: NodeGroupArgs, weight: int) -> None:
        self.args = args
        self.weight = weight
        self.groups: list[str | None] = []
        self.node_group: IntArray = np.zeros(0, dtype=np.int64)
        self.views: dict[str, _QueueView] = {}
        self.used: dict[tuple[str, str], Resources] = {}   # (queue, group) -> allocated there

    def _affinity(self, ssn: Session, queue: QueueInfo, hierarchy: bool) -> GroupAffinity:
        seen: set[str] = set()
        q: QueueInfo | None = queue
        while q is not None and q.name not in seen:
            seen.add(q.name)
            try:
                aff = parse_group_affinity(q.name, _spec_affinity(q))
            except ValueError as exc:   # a malformed queue must not stop the session: it matches no group
                log.warning("%s", exc)
                return GroupAffinity(required=("\x00invalid",))
            if not aff.is_empty() or not hierarchy:
                return aff
            q = ssn.queues.get(q.parent or "root") if q.name != "root" else None
        return GroupAffinity()

    def _view(self, ssn: Session, queue: QueueInfo, hierarchy: bool) -> _QueueView:
        aff = self._affinity(ssn, queue, hierarchy)
        ok = np.zeros(len(self.groups), dtype=np.bool_)
        score = np.zeros(len(self.groups), dtype=np.int64)
        why: list[str | None] = []
        for g, group in enumerate(self.groups):
            reason = group_predicate(group, aff, strict=self.args.strict)
            ok[g] = reason is None
            why.append(reason)
            score[g] = int(group_score(group, aff, preferred_order=self.args.preferred_order) * self.weight)
        passed = ok[self.node_group]
        reasons: dict[int, list[tuple[Code, str]]] = {}
        for i in np.flatnonzero(~passed).tolist():
            reasons[i] = [(Code.UNRESOLVABLE, str(why[int(self.node_group[i])]))]
        try:
            limits = parse_group_limits(queue.name, _annotations(queue))
        except ValueError as exc:
            log.warning("%s; the queue's per-group limits are ignored", exc)
            limits = {}
        return _QueueView(passed, reasons, score[self.node_group], limits)

    def on_session_open(self, ssn: Session) -> None:
        opt = ssn.conf.plugin(NAME)
        hierarchy = bool(opt is not None and opt.hierarchy)
        index: dict[str | None, int] = {}
        self.groups = []
        ids = []
        for n in ssn.nodes:
            group = n.view.labels.get(NODEGROUP_LABEL) or None
            if group not in index:
                index[group] = len(self.groups)
                self.groups.append(group)
            ids.append(index[group])
        self.node_group = np.asarray(ids, dtype=np.int64)
        self.views = {}
        self.used = {}
        for n in ssn.nodes:
            group = n.view.labels.get(NODEGROUP_LABEL)
            if not group:
                continue
            for t in n.tasks.values():
                job = ssn.jobs.get(t.job)
                if job is not None and t.status in ALLOCATED_STATUS:
                    key = (job.queue, group)
                    self.used[key] = self.used.get(key, Resources()) + t.resreq

        def view_of(task: TaskInfo) -> _QueueView | None:
            job = ssn.jobs.get(task.job)
            queue = ssn.queues.get(job.queue) if job is not None else None
            if queue is None:
                return None
            v = self.views.get(queue.name)
            if v is None:
                v = self.views[queue.name] = self._view(ssn, queue, hierarchy)
            return v

        def predicate(task: TaskInfo) -> FilterResult:
            v = view_of(task)
            if v is None:
                return FilterResult(np.ones(len(ssn.nodes), dtype=np.bool_))
            if not v.limits:
                return FilterResult(v.passed, v.reasons)
            queue = ssn.jobs[task.job].queue
            passed, reasons = v.passed.copy(), dict(v.reasons)
            for g, group in enumerate(self.groups):
                if group is None:
                    continue
                over = group_quota_exceeded(self.used.get((queue, group), Resources()), task.resreq,
                                            v.limits.get(group))
                if over:
                    msg = f"queue {queue} would exceed its quota in node group {group}: {', '.join(over)}"
                    for i in np.flatnonzero(passed & (self.node_group == g)).tolist():
                        reasons[i] = [(Code.UNSCHEDULABLE, msg)]
                    passed &= self.node_group != g
            return FilterResult(passed, reasons)

        def score(task: TaskInfo) -> IntArray:
            v = view_of(task)
            return v.score if v is not None else np.zeros(len(ssn.nodes), dtype=np.int64)

        def track(sign: int, task: TaskInfo) -> None:
            node = ssn.node_by_name.get(task.node_name)
            job = ssn.jobs.get(task.job)
            group = node.view.labels.get(NODEGROUP_LABEL) if node is not None else None
            if job is None or not group:
                return
            key = (job.queue, group)
            cur = self.used.get(key, Resources())
            self.used[key] = cur + task.resreq if sign > 0 else cur - task.resreq

        ssn.add_vector_predicate_fn(NAME, predicate)
        ssn.add_vector_score_fn(NAME, score)
        ssn.add_event_handler(EventHandler(allocate=lambda t: track(1, t), deallocate=lambda t: track(-1, t)))

    def on_session_close(self, ssn: Session) -> None:
        return None


@register_plugin(NAME)
def _build(args: Arguments) -> NodeGroup:
    return NodeGroup(NodeGroupArgs.from_raw(args), args.score_weight())
