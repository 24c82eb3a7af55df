"""conformance: never evict what the cluster needs to run (docs/design/scheduler.md §4.3).

Pods of ``kube-system`` and pods with the ``system-cluster-critical`` / ``system-node-critical`` priority classes are
never victims of preempt or reclaim.  Loadwise also keeps here the ``volcano.sh/preemptable: "false"`` marker of a
pod's PodGroup (the pod-level marker is honoured by the actions themselves).

Voting alone cannot promise that: under the tier rules (docs/design/scheduler.md §2.6) a tier whose intersection comes out
empty hands the decision to later voters or the next tier, which may not include conformance.  So at session open
conformance also marks every protected task not preemptable, which the preempt and reclaim actions' own candidate
filters respect whatever the votes say (only in a session whose conf runs one of them: nothing else reads the mark).
"""

from __future__ import annotations

import itertools

from scheduler.batch.victims import VictimFacts, conformance_allows
from scheduler.framework.api import TaskInfo
from scheduler.framework.plugin import Arguments, register_plugin
from scheduler.framework.session import PERMIT, Session

__all__ = ["Conformance"]

NAME = "conformance"
# the argument keys this plugin reads (a nested key as parent/child); tests hold the code and docs to it
ARGUMENTS: tuple[str, ...] = ()
# the actions that choose victims by the tasks' preemptable marks
EVICTING_ACTIONS = frozenset({"preempt", "reclaim"})


class Conformance:
    name = NAME

    def on_session_open(self, ssn: Session) -> None:
        opt = ssn.conf.plugin(NAME)
        # only preempt and reclaim read the marks: a session running neither spares the walk over every task
        guarding = (opt is not None and (opt.enabled("enablePreemptable") or opt.enabled("enableReclaimable"))
                    and not ssn.action_names.isdisjoint(EVICTING_ACTIONS))

        def evictable(task: TaskInfo) -> bool:
            facts = VictimFacts(namespace=task.namespace, priority_class_name=task.pod.priority_class_name,
                                job_id=task.job, job_priority=0, task_priority=task.priority)
            if not conformance_allows(facts) or not task.preemptable:
                return False
            job = ssn.jobs.get(task.job)
            return job is None or job.preemptable

        def victims(evictor: TaskInfo, evictees: list[TaskInfo]) -> tuple[list[TaskInfo] | None, int]:
            return [t for t in evictees if evictable(t)], PERMIT

        if guarding:
            # evictable(task) for a preemptable task, without building its facts: whether conformance allows its
            # namespace and priority class (a handful of pairs), and whether its job is preemptable
            allowed: dict[tuple[str, str], bool] = {}
            jobs = ssn.jobs
            on_nodes = (t for n in ssn.nodes for t in n.tasks.values())
            for task in itertools.chain(ssn.tasks.values(), on_nodes):
                if not task.preemptable:
                    continue
                pod = task.pod
                key = (pod.namespace, pod.priority_class_name)
                ok = allowed.get(key)
                if ok is None:
                    ok = allowed[key] = conformance_allows(VictimFacts(namespace=key[0], priority_class_name=key[1],
                                                                       job_id="", job_priority=0, task_priority=0))
                job = jobs.get(task.job)
                if not ok or (job is not None and not job.preemptable):
                    task.preemptable = False
        ssn.add_preemptable_fn(NAME, victims)
        ssn.add_reclaimable_fn(NAME, victims)

    def on_session_close(self, ssn: Session) -> None:
        return None


@register_plugin(NAME)
def _build(args: Arguments) -> Conformance:
    return Conformance()
