"""What a session derives from a pod object and the session's resource columns, made once per pod object and kept
by the scheduler's session memo (scheduler.framework.memo): the task's template, from which each session makes (or
renews in place) its mutable :class:`~scheduler.framework.api.TaskInfo`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from common.objects import PodView, PriorityClassView
from common.resources import CPU, MEMORY, PODS, Resources
from common.slots import slot_maker

from .api import (
    PREEMPTABLE_KEY,
    TASK_PRIORITY_KEY,
    TASK_SPEC_KEY,
    TaskInfo,
    TaskStatus,
    is_best_effort,
    pod_flag,
    task_status_of,
)
from .memo import IdentityMemo
from .snapshot import job_id_of

__all__ = ["TaskTemplate"]


@dataclass(frozen=True, slots=True, eq=False)
class TaskTemplate:
    """Everything a :class:`TaskInfo` derives from its pod and the session's resource columns, so that sessions can
    reuse it for a pod object they already saw (:meth:`task` makes the session's mutable task from it).  ``vector``
    is read-only: every task made from the template shares it."""

    uid: str
    resreq: Resources
    status: TaskStatus
    node_name: str
    priority: int
    preemptable: bool
    role: str
    best_effort: bool
    vector: npt.NDArray[np.int64] = field(repr=False)
    nonzero: tuple[int, int]
    nominated_node: str
    names: frozenset[str]   # the resource names the pod requests
    job_id: str             # the job the pod belongs to when the scheduler owns it (:func:`job_id_of`)
    grouped: bool           # the pod names a PodGroup (else it is a group of one)
    # what the session reads from the pod again and again: whether it finished, who schedules it, and what its
    # group of one needs (the job's name, creation time, and the inputs of job_priority)
    terminal: bool
    scheduler_name: str
    job_name: str
    creation_time: float
    priority_class_name: str
    spec_priority: int | None   # spec.priority when the pod sets it
    packed: npt.NDArray[np.int64] = field(repr=False)   # vector and nonzero, as NodeArrays.add_many takes them

    @classmethod
    def of(cls, pod: PodView, columns: Mapping[str, int],
           vectors: IdentityMemo[_Vectors] | None = None) -> TaskTemplate:
        """``vectors``: what was derived from a pod's request objects (for these columns) — the scheduler cache
        keeps them when it refreshes a pod whose containers did not change, so a bound or started pod finds them."""
        got = vectors.get(pod.requests) if vectors is not None else None
        if got is None or got[0] is not pod.nonzero_requests:
            got = _vectors(pod, columns)
            if vectors is not None:
                vectors.put(pod.requests, got)
        _, req, vec, nonzero, packed, best_effort, names = got
        prio_text = pod.annotations.get(TASK_PRIORITY_KEY)
        has_priority = _has_spec_priority(pod)
        priority = pod.priority if has_priority else 1
        if prio_text is not None:
            try:
                priority = int(prio_text)
            except ValueError:
                pass
        flag = pod_flag(pod, PREEMPTABLE_KEY)
        job_id = job_id_of(pod)
        spec_priority = pod.priority if has_priority else None
        # TaskTemplate's fields in their order, by position (keywords cost as much again as the call)
        template: TaskTemplate = _make_template(
            pod.uid or pod.key, req, task_status_of(pod), pod.node_name, priority,
            True if flag is None else flag.strip().lower() in ("true", "1", "yes"), pod_flag(pod, TASK_SPEC_KEY) or "",
            best_effort, vec, nonzero, _nominated(pod), names,
            job_id, bool(pod.group_name), pod.terminal, pod.scheduler_name, job_id.split("/", 1)[1],
            pod.creation_time or 0.0, pod.priority_class_name, spec_priority, packed)
        return template

    def rebound(self, was: PodView, pod: PodView) -> TaskTemplate | None:
        """``TaskTemplate.of(pod)`` made from this template of ``was``, for ``pod`` a later version of the same
        pod whose every input but its status, node and nominated node is the very object or value ``was`` has (as
        ``PodView.refreshed`` keeps them for a bind or a status update); None when any other may differ."""
        if (pod.requests is not was.requests or pod.nonzero_requests is not was.nonzero_requests
                or pod.annotations is not was.annotations or pod.labels is not was.labels or pod.uid != was.uid
                or pod.name != was.name or pod.namespace != was.namespace or pod.priority != was.priority
                or pod.scheduler_name != was.scheduler_name or pod.creation_time != was.creation_time
                or pod.priority_class_name != was.priority_class_name
                or _has_spec_priority(pod) != _has_spec_priority(was)):
            return None
        template: TaskTemplate = _make_template(
            self.uid, self.resreq, task_status_of(pod), pod.node_name, self.priority,
            self.preemptable, self.role, self.best_effort, self.vector, self.nonzero,
            _nominated(pod), self.names, self.job_id,
            self.grouped, pod.terminal, self.scheduler_name, self.job_name, self.creation_time,
            self.priority_class_name, self.spec_priority, self.packed)
        return template

    def single_priority(self, classes: Mapping[str, PriorityClassView], default: int) -> int:
        """The priority of the pod's group of one (``job_priority(None, pod, snapshot)``) from the template's copy
        of its inputs: the value of the PriorityClass it names, else its ``spec.priority``, else ``default``."""
        pc = classes.get(self.priority_class_name)
        if pc is not None:
            return pc.value
        return self.spec_priority if self.spec_priority is not None else default

    def task(self, pod: PodView, job: str, renew: TaskInfo | None = None) -> TaskInfo:
        """The pod's task as the session starts; ``renew`` is an earlier task of this pod that nothing uses any more,
        made anew in place (every field reset) instead of allocating another."""
        return TaskInfo.filled((self.uid, job, pod, self.resreq, self.status, self.node_name, self.priority,
                                self.preemptable, self.role, self.best_effort, self.vector, self.nonzero,
                                self.nominated_node, False, ""), renew)


def _has_spec_priority(pod: PodView) -> bool:
    """Whether the pod's spec sets ``priority`` (else its tasks' priority is 1, and no spec priority is kept)."""
    return "priority" in (pod.raw.get("spec") or {})


def _nominated(pod: PodView) -> str:
    """The node the pod's status nominates, "" if none."""
    return str((pod.raw.get("status") or {}).get("nominatedNodeName", "") or "")


# TaskTemplate's constructor made slot by slot (common.slots: a template per new pod and per bind)
_make_template = slot_maker(TaskTemplate)


# of a pod's requests object: (the pod's nonzero_requests object, resreq, vector, (nonzero cpu, nonzero memory),
# packed, best effort, requested names)
_Vectors = tuple[Resources, Resources, npt.NDArray[np.int64], tuple[int, int], npt.NDArray[np.int64], bool,
                 frozenset[str]]


def _vectors(pod: PodView, columns: Mapping[str, int]) -> _Vectors:
    req = pod.requests + Resources({PODS: 1})
    vec = np.zeros(len(columns), dtype=np.int64)
    for name, v in req.items():
        j = columns.get(name)
        if j is not None:
            vec[j] = v
    vec.flags.writeable = False
    nonzero = (pod.nonzero_requests.get(CPU, 0), pod.nonzero_requests.get(MEMORY, 0))
    packed = np.concatenate((vec, np.asarray(nonzero, dtype=np.int64)))
    packed.flags.writeable = False
    return pod.nonzero_requests, req, vec, nonzero, packed, is_best_effort(req), frozenset(pod.requests)
