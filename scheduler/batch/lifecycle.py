"""PodGroup phase and Queue state rules (docs/design/scheduler.md §5).

The session computes counts; these functions turn them into the phase, counts and state the
write-back sends, so the rules are testable without a session.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum

__all__ = [
    "PodGroupPhase",
    "QueueState",
    "QueueCommand",
    "GangCounts",
    "podgroup_phase",
    "queue_state_after",
    "QueueStatusCounts",
    "queue_status_counts",
    "queue_missing_message",
    "DEFAULT_QUEUE",
    "POD_GROUP_READY",
    "POD_GROUP_NOT_READY",
    "podgroup_condition",
    "merge_condition",
    "status_changed",
]

DEFAULT_QUEUE = "default"
POD_GROUP_READY = "pod group is ready"
POD_GROUP_NOT_READY = "pod group is not ready"


class PodGroupPhase(StrEnum):
    PENDING = "Pending"
    INQUEUE = "Inqueue"
    RUNNING = "Running"
    UNKNOWN = "Unknown"
    COMPLETED = "Completed"


class QueueState(StrEnum):
    OPEN = "Open"
    CLOSING = "Closing"
    CLOSED = "Closed"
    UNKNOWN = "Unknown"


class QueueCommand(StrEnum):
    OPEN = "OpenQueue"
    CLOSE = "CloseQueue"


@dataclass(frozen=True, slots=True)
class GangCounts:
    """Task counts of one job at session close.

    ``scheduled`` = tasks in a scheduled status (Binding, Bound, Running, Allocated, Succeeded,
    Failed) plus Releasing tasks that still hold a node; ``completed`` = Succeeded + Failed.
    """

    min_member: int
    running: int
    scheduled: int
    completed: int
    unschedulable_this_session: bool


def podgroup_phase(previous: PodGroupPhase, counts: GangCounts) -> PodGroupPhase:
    """Volcano's ``getPodGroupPhase`` at session close."""
    if counts.running > 0 and counts.unschedulable_this_session:
        return PodGroupPhase.UNKNOWN
    if counts.scheduled >= counts.min_member:
        if counts.scheduled > 0 and counts.scheduled == counts.completed:
            return PodGroupPhase.COMPLETED
        return PodGroupPhase.RUNNING
    if previous is PodGroupPhase.INQUEUE:
        return PodGroupPhase.INQUEUE
    return PodGroupPhase.PENDING


def queue_state_after(current: QueueState, command: QueueCommand | None, podgroups: int) -> QueueState:
    """The queue controller's state machine: Close drains to Closed through Closing."""
    if command is QueueCommand.OPEN:
        return QueueState.OPEN
    if command is QueueCommand.CLOSE or current in (QueueState.CLOSING, QueueState.CLOSED):
        return QueueState.CLOSED if podgroups == 0 else QueueState.CLOSING
    return current


@dataclass(frozen=True, slots=True)
class QueueStatusCounts:
    pending: int = 0
    inqueue: int = 0
    running: int = 0
    unknown: int = 0
    completed: int = 0

    def to_status(self) -> dict[str, int]:
        return {
            "pending": self.pending,
            "inqueue": self.inqueue,
            "running": self.running,
            "unknown": self.unknown,
            "completed": self.completed,
        }


def queue_status_counts(phases: Iterable[PodGroupPhase]) -> QueueStatusCounts:
    """PodGroup counts per phase for a queue's ``status``."""
    tally = dict.fromkeys(PodGroupPhase, 0)
    for phase in phases:
        tally[phase] += 1
    return QueueStatusCounts(
        pending=tally[PodGroupPhase.PENDING],
        inqueue=tally[PodGroupPhase.INQUEUE],
        running=tally[PodGroupPhase.RUNNING],
        unknown=tally[PodGroupPhase.UNKNOWN],
        completed=tally[PodGroupPhase.COMPLETED],
    )


def queue_missing_message(job: str, queue: str) -> str:
    """Why a job whose queue does not exist stays pending."""
    return f"job {job} is in queue {queue!r}, which does not exist; create the Queue or set spec.queue"


def podgroup_condition(
    kind: str, reason: str, message: str, *, session_uid: str, now: str, status: str = "True"
) -> dict[str, str]:
    """A PodGroup ``status.conditions`` entry (``kind`` is ``Unschedulable`` or ``Scheduled``)."""
    return {
        "type": kind,
        "status": status,
        "transitionID": session_uid,
        "lastTransitionTime": now,
        "reason": reason,
        "message": message,
    }


def merge_condition(conditions: list[dict[str, str]], new: dict[str, str]) -> list[dict[str, str]]:
    """Replace the condition of the same type (or append), keeping the others in order."""
    out = [c for c in conditions if c.get("type") != new["type"]]
    out.append(new)
    return out


_VOLATILE = ("transitionID", "lastTransitionTime")


def status_changed(old: dict[str, object], new: dict[str, object]) -> bool:
    """True when a PodGroup status differs in more than condition timestamps/transition IDs."""

    def stable(status: dict[str, object]) -> dict[str, object]:
        conditions = status.get("conditions") or []
        cleaned = []
        if isinstance(conditions, list):
            for cond in conditions:
                if isinstance(cond, dict):
                    cleaned.append({k: v for k, v in cond.items() if k not in _VOLATILE})
        rest = {k: v for k, v in status.items() if k != "conditions"}
        rest["conditions"] = sorted(cleaned, key=lambda c: str(c.get("type", "")))
        return rest

    return stable(old) != stable(new)
