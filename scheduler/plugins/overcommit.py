"""overcommit: a cluster-wide admission throttle (docs/design/scheduler.md §4.10).

A job is admitted (PodGroup Pending → Inqueue) only while the ``minResources`` of everything already admitted but
not yet running, plus its own, fit in ``total × overcommit-factor − used``.  Queue-agnostic; it keeps enqueue from
admitting far more work than the cluster could ever start.
"""

from __future__ import annotations

from collections.abc import Iterator

from common.resources import Resources
from scheduler.batch.args import OvercommitArgs
from scheduler.batch.overcommit import enqueue_overused, overcommit_idle, overused_message
from scheduler.batch.queue_usage import job_inqueue
from scheduler.framework.api import JobInfo
from scheduler.framework.plugin import Arguments, register_plugin
from scheduler.framework.session import PERMIT, REJECT, Session

__all__ = ["Overcommit", "podgroup_jobs"]

NAME = "overcommit"
# the argument keys this plugin reads (a nested key as parent/child); tests hold the code and docs to it
ARGUMENTS: tuple[str, ...] = ("overcommit-factor",)


def podgroup_jobs(ssn: Session) -> Iterator[JobInfo]:
    """The session's PodGroup jobs, in the session's job order: the only jobs with ``minResources`` (a group of
    one has none), found by key, without reading every job object (11,000 groups of one at steady state, each a
    cache miss)."""
    jobs = ssn.jobs
    return filter(None, map(jobs.get, ssn.snapshot.podgroups))


class Overcommit:
    name = NAME

    def __init__(self, args: OvercommitArgs) -> None:
        self.factor = args.factor
        self.idle = Resources()
        self.inqueue = Resources()

    def on_session_open(self, ssn: Session) -> None:
        used = [ssn.arrays.to_resources(ssn.arrays.used.sum(axis=0))] if ssn.nodes else []
        self.idle = overcommit_idle(ssn.total_resource, used, self.factor)
        self.inqueue = Resources()
        for job in podgroup_jobs(ssn):
            if not job.min_resources:
                continue
            if job.phase == "Inqueue":
                self.inqueue = self.inqueue + job.min_resources
            elif job.phase == "Running":
                self.inqueue = self.inqueue + job_inqueue(job)

        def enqueueable(job: JobInfo) -> int:
            if not job.min_resources:
                return PERMIT
            over = enqueue_overused(self.inqueue, job.min_resources, self.idle)
            if not over:
                return PERMIT
            job.job_fit_error = overused_message(over)
            return REJECT

        def enqueued(job: JobInfo) -> None:
            if job.min_resources:   # a group of one has none: the sum would be the same
                self.inqueue = self.inqueue + job.min_resources

        ssn.add_job_enqueueable_fn(NAME, enqueueable)
        ssn.add_job_enqueued_fn(NAME, enqueued)

    def on_session_close(self, ssn: Session) -> None:
        return None


@register_plugin(NAME)
def _build(args: Arguments) -> Overcommit:
    return Overcommit(OvercommitArgs.from_raw(args))
