"""sla: jobs that have waited their service-level time are served first and admitted regardless of quota votes
(docs/design/scheduler.md §4.11).

The waiting time is the plugin argument ``sla-waiting-time`` (a Go duration) or, per job, the PodGroup annotation
``sla-waiting-time`` / ``volcano.sh/sla-waiting-time``.  Jobs with an SLA sort before jobs without, earlier
deadline first.  Once the deadline has passed the plugin permits enqueue and pipelining; a permit in its tier ends
those votes, so the job is admitted and keeps partial reservations.
"""

from __future__ import annotations

import logging

from scheduler.batch.args import SlaArgs
from scheduler.batch.sla import SlaJob, sla_job_order, sla_reached, waiting_time
from scheduler.framework.api import JobInfo
from scheduler.framework.plugin import Arguments, register_plugin
from scheduler.framework.session import ABSTAIN, PERMIT, Session

__all__ = ["Sla"]

NAME = "sla"
# the argument keys this plugin reads (a nested key as parent/child); tests hold the code and docs to it
ARGUMENTS: tuple[str, ...] = ("sla-waiting-time",)
log = logging.getLogger(__name__)


class Sla:
    name = NAME

    def __init__(self, args: SlaArgs) -> None:
        self.default = args.waiting_seconds
        self.jobs: dict[str, SlaJob] = {}

    def _job(self, job: JobInfo) -> SlaJob:
        found = self.jobs.get(job.uid)
        if found is None:
            annotations = job.podgroup.annotations if job.podgroup is not None else {}
            try:
                wait = waiting_time(annotations, self.default, job=job.uid)
            except ValueError as exc:   # one bad annotation must not break the session: use the plugin default
                log.warning("%s; using the plugin's sla-waiting-time", exc)
                wait = self.default
            found = self.jobs[job.uid] = SlaJob(job.creation_time, wait)
        return found

    def on_session_open(self, ssn: Session) -> None:
        self.jobs = {}

        def job_order(left: JobInfo, right: JobInfo) -> int:
            return sla_job_order(self._job(left), self._job(right))

        def vote(job: JobInfo) -> int:
            return PERMIT if sla_reached(self._job(job), ssn.now) else ABSTAIN

        ssn.add_job_order_fn(NAME, job_order)
        ssn.add_job_enqueueable_fn(NAME, vote)
        ssn.add_job_pipelined_fn(NAME, vote)

    def on_session_close(self, ssn: Session) -> None:
        return None


@register_plugin(NAME)
def _build(args: Arguments) -> Sla:
    return Sla(SlaArgs.from_raw(args))
