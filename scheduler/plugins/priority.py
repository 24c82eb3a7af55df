"""priority: higher-priority jobs and tasks first, and preemption only of strictly lower priority
(docs/design/scheduler.md §4.2).

Job priority is the value of the PodGroup's PriorityClass (the pod's own for a group of one); task priority is the
pod's ``spec.priority`` (``volcano.sh/task-priority`` overrides).  Between jobs the job priorities are compared,
inside one job the task priorities, so a preemption never evicts a pod of equal or higher priority.
"""

from __future__ import annotations

from scheduler.batch.victims import VictimFacts, priority_allows
from scheduler.framework.api import JobInfo, TaskInfo
from scheduler.framework.plugin import Arguments, register_plugin
from scheduler.framework.session import PERMIT, Session

__all__ = ["Priority"]

NAME = "priority"
# the argument keys this plugin reads (a nested key as parent/child); tests hold the code and docs to it
ARGUMENTS: tuple[str, ...] = ()


def _higher_first(left: int, right: int) -> int:
    if left == right:
        return 0
    return -1 if left > right else 1


def _facts(task: TaskInfo, job: JobInfo | None) -> VictimFacts:
    return VictimFacts(namespace=task.namespace, priority_class_name=task.pod.priority_class_name, job_id=task.job,
                       job_priority=job.priority if job is not None else 0, task_priority=task.priority)


class Priority:
    name = NAME

    def on_session_open(self, ssn: Session) -> None:
        def task_order(left: TaskInfo, right: TaskInfo) -> int:
            return _higher_first(left.priority, right.priority)

        def job_order(left: JobInfo, right: JobInfo) -> int:
            return _higher_first(left.priority, right.priority)

        def preemptable(preemptor: TaskInfo, preemptees: list[TaskInfo]) -> tuple[list[TaskInfo] | None, int]:
            me = _facts(preemptor, ssn.jobs.get(preemptor.job))
            victims = [t for t in preemptees
                       if t.job in ssn.jobs and priority_allows(me, _facts(t, ssn.jobs[t.job]))]
            return victims, PERMIT

        def starving(job: JobInfo) -> bool:
            # every task, not just minMember: a job with tasks left to place may still preempt for them
            return job.ready_task_num() + job.waiting_task_num() < len(job.tasks)

        ssn.add_task_order_fn(NAME, task_order)
        ssn.add_job_order_fn(NAME, job_order, key=lambda job: -job.priority)   # higher first
        ssn.add_preemptable_fn(NAME, preemptable)
        ssn.add_job_starving_fn(NAME, starving)

    def on_session_close(self, ssn: Session) -> None:
        return None


@register_plugin(NAME)
def _build(args: Arguments) -> Priority:
    return Priority()
