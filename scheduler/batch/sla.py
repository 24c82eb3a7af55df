"""SLA waiting times (docs/design/scheduler.md §4.11)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from common.duration import parse_duration

__all__ = ["SLA_ANNOTATIONS", "SlaJob", "waiting_time", "sla_deadline", "sla_job_order", "sla_reached"]

#: PodGroup annotations overriding the plugin-wide ``sla-waiting-time`` (first found wins).
SLA_ANNOTATIONS = ("sla-waiting-time", "volcano.sh/sla-waiting-time")


@dataclass(frozen=True, slots=True)
class SlaJob:
    creation_time: float
    waiting_seconds: float | None


def waiting_time(annotations: Mapping[str, str], default: float | None, *, job: str = "") -> float | None:
    """A job's waiting time in seconds: its annotation if set, else the plugin default (None = no SLA).

    A malformed annotation raises ``ValueError`` naming the job and annotation.
    """
    for key in SLA_ANNOTATIONS:
        raw = annotations.get(key)
        if raw:
            where = f"PodGroup {job} annotation {key}" if job else f"annotation {key}"
            seconds = parse_duration(raw, field=where)
            if seconds <= 0:
                raise ValueError(f"{where}: waiting time must be positive, got {raw!r}")
            return seconds
    return default


def sla_deadline(job: SlaJob) -> float | None:
    return None if job.waiting_seconds is None else job.creation_time + job.waiting_seconds


def sla_job_order(left: SlaJob, right: SlaJob) -> int:
    """-1 when ``left`` goes first: jobs with an SLA before jobs without, earlier deadline first."""
    ld, rd = sla_deadline(left), sla_deadline(right)
    if ld is None and rd is None:
        return 0
    if ld is None:
        return 1
    if rd is None:
        return -1
    if ld < rd:
        return -1
    if ld > rd:
        return 1
    return 0


def sla_reached(job: SlaJob, now: float) -> bool:
    """True once the job has waited its SLA: enqueue/pipelined then vote permit (else abstain)."""
    return job.waiting_seconds is not None and now - job.creation_time >= job.waiting_seconds
