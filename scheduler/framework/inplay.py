"""The jobs a session's actions and close may have anything to do with, kept from the events rather than found by a
walk over every job (docs/design/scheduler.md §2.1).

At steady state nearly every job is a bound pod's group of one: its task Bound or Running (or finished), nothing
pending, waiting or moved, no PodGroup.  Enqueue, allocate and backfill, the engine's report and the write-back
each pass over such a job without doing anything; a walk of 11,000 of them per action is most of what a batch of
100 new pods costs a session outside its placements.  The carried state (:mod:`.carried`) keeps the groups of one
that are not so (:func:`needs_look`), and apart those without a ``schedule_start`` (enqueue stamps them): each job
it makes anew is put in or left out of them as it is, and those found settled (or stamped) at the next opening
leave; a session adds the groups of one it touches, in the jobs' order.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

from .api import JobInfo
from .snapshot import DEFAULT_QUEUE

__all__ = ["JobsInPlay", "needs_look"]

_PENDING_PHASES = ("", "Pending")   # JobInfo.is_pending


def needs_look(job: JobInfo) -> bool:
    """Whether an action or the session's close may have anything to do with the group of one ``job`` (besides
    enqueue's stamp): it has a task that is Pending, Pipelined, Allocated or Binding (or pending best effort, or
    waiting), a task that moved, or a phase not yet admitted.  A job for which this is False is passed over by
    every action's, the engine's and the write-back's own checks."""
    return bool(job._unsettled or job._moved or job._pending or job._waiting or job._pending_best_effort
                or job.phase in _PENDING_PHASES)


class JobsInPlay:
    """A session's jobs that may need a look, in the order of ``jobs`` (the session's): every job of ``head``
    (the PodGroups' jobs, which come first), then the groups of one in ``ranks`` (uid → place in the pods'
    order) and those the session touched since (found on its watch list, their place given by ``rank_of``);
    ``unstamped``: the groups of one that may have no ``schedule_start``."""

    def __init__(self, jobs: Mapping[str, JobInfo], head: Sequence[JobInfo], ranks: dict[str, int],
                 rank_of: Callable[[str], int | None], unstamped: Collection[str]) -> None:
        self._jobs = jobs
        self._unstamped = unstamped
        self._head = list(head)
        self._head_keys = {job.uid for job in head}
        self._ranks = ranks
        self._rank_of = rank_of
        self._seen = 0   # how much of the watch list has been read
        self._ordered: list[JobInfo] | None = None

    def jobs(self, watched: Sequence[Any]) -> list[JobInfo]:
        """The jobs in play, the groups of one touched since the last call (on ``watched``) added."""
        if len(watched) > self._seen:
            self._note(watched)
        if self._ordered is None:
            jobs, ranks = self._jobs, self._ranks
            self._ordered = self._head + [jobs[uid] for uid in sorted(ranks, key=ranks.__getitem__)]
        return self._ordered

    def _note(self, watched: Sequence[Any]) -> None:
        ranks, head = self._ranks, self._head_keys
        for obj in watched[self._seen:]:
            uid = obj.uid if isinstance(obj, JobInfo) else obj.job
            if uid in ranks or uid in head or uid not in self._jobs:
                continue
            rank = self._rank_of(uid)
            if rank is not None:
                ranks[uid] = rank
                self._ordered = None
        self._seen = len(watched)

    def unstamped(self) -> list[JobInfo]:
        """The jobs that may have no ``schedule_start``: the PodGroups' and the groups of one made anew since
        enqueue last stamped them."""
        jobs = self._jobs
        return self._head + [jobs[uid] for uid in self._unstamped if uid in jobs]

    def queue_names(self) -> list[str]:
        """Every queue holding a session job, in the order of its first job: the groups of one are all in the
        default queue, after every PodGroup's job."""
        names = dict.fromkeys(job.queue for job in self._head)
        if len(self._jobs) > len(self._head):
            names[DEFAULT_QUEUE] = None
        return list(names)
