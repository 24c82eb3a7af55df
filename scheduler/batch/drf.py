"""Dominant resource fairness between jobs (docs/design/scheduler.md §4.4, flat mode)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from common.resources import Resources
from scheduler.batch.quota import dominant_share

__all__ = ["DrfCandidate", "SHARE_EPSILON", "job_share", "drf_victims"]

#: Shares within this distance count as equal when deciding preemption.
SHARE_EPSILON = 1e-6


@dataclass(frozen=True, slots=True)
class DrfCandidate:
    """A preemptee: its job, that job's current allocation and the task's own request."""

    job_id: str
    job_allocated: Resources
    request: Resources


def job_share(allocated: Mapping[str, int], total: Mapping[str, int]) -> float:
    """A job's dominant share of the cluster total (``pods`` included, as in Volcano)."""
    return dominant_share(allocated, total)[0]


def drf_victims(
    preemptor_allocated: Resources,
    preemptor_request: Resources,
    candidates: Sequence[DrfCandidate],
    total: Mapping[str, int],
) -> list[int]:
    """Indices of candidates drf allows the preemptor to evict.

    The preemptor's share counts its new task; a victim job's share is taken after giving up the
    candidate, tracking each victim job's allocation as earlier candidates are considered.  A
    candidate is a victim iff the preemptor would still not be ahead of it (``ls < rs`` or equal).
    """
    ls = job_share(preemptor_allocated + preemptor_request, total)
    running: dict[str, Resources] = {}
    chosen: list[int] = []
    for index, cand in enumerate(candidates):
        current = running.get(cand.job_id, cand.job_allocated)
        after = current - cand.request
        running[cand.job_id] = after
        rs = job_share(after, total)
        if ls < rs or abs(ls - rs) <= SHARE_EPSILON:
            chosen.append(index)
    return chosen
