from __future__ import annotations

import pytest

from scheduler.batch.lifecycle import (
    GangCounts,
    QueueCommand,
    QueueState,
    podgroup_phase,
    queue_missing_message,
    queue_state_after,
    queue_status_counts,
)
from scheduler.batch.lifecycle import (
    PodGroupPhase as P,
)


@pytest.mark.parametrize(
    ("previous", "counts", "expected"),
    [
        (P.RUNNING, GangCounts(4, running=2, scheduled=4, completed=0, unschedulable_this_session=True), P.UNKNOWN),
        (P.INQUEUE, GangCounts(4, running=0, scheduled=4, completed=0, unschedulable_this_session=False), P.RUNNING),
        (P.RUNNING, GangCounts(4, running=0, scheduled=4, completed=4, unschedulable_this_session=False), P.COMPLETED),
        (P.INQUEUE, GangCounts(4, running=0, scheduled=3, completed=0, unschedulable_this_session=True), P.INQUEUE),
        (P.PENDING, GangCounts(4, running=0, scheduled=0, completed=0, unschedulable_this_session=False), P.PENDING),
        # a running group that lost tasks falls back to Pending
        (P.RUNNING, GangCounts(4, running=2, scheduled=2, completed=0, unschedulable_this_session=False), P.PENDING),
        (P.PENDING, GangCounts(1, running=1, scheduled=1, completed=0, unschedulable_this_session=False), P.RUNNING),
    ],
)
def test_podgroup_phase(previous: P, counts: GangCounts, expected: P) -> None:
    assert podgroup_phase(previous, counts) is expected


@pytest.mark.parametrize(
    ("current", "command", "groups", "expected"),
    [
        (QueueState.OPEN, None, 3, QueueState.OPEN),
        (QueueState.OPEN, QueueCommand.CLOSE, 3, QueueState.CLOSING),
        (QueueState.OPEN, QueueCommand.CLOSE, 0, QueueState.CLOSED),
        (QueueState.CLOSING, None, 1, QueueState.CLOSING),
        (QueueState.CLOSING, None, 0, QueueState.CLOSED),
        (QueueState.CLOSED, QueueCommand.OPEN, 0, QueueState.OPEN),
    ],
)
def test_queue_state(current: QueueState, command: QueueCommand | None, groups: int, expected: QueueState) -> None:
    assert queue_state_after(current, command, groups) is expected


def test_queue_counts_and_missing_message() -> None:
    counts = queue_status_counts([P.PENDING, P.RUNNING, P.RUNNING, P.COMPLETED])
    assert counts.to_status() == {"pending": 1, "inqueue": 0, "running": 2, "unknown": 0, "completed": 1}
    assert "'nope', which does not exist" in queue_missing_message("ns/pg", "nope")


def test_conditions_and_change_detection() -> None:
    from scheduler.batch.lifecycle import merge_condition, podgroup_condition, status_changed

    c1 = podgroup_condition("Unschedulable", "NotEnoughResources", "3/4 tasks ...", session_uid="s1", now="t1")
    c2 = podgroup_condition("Unschedulable", "NotEnoughResources", "3/4 tasks ...", session_uid="s2", now="t2")
    sched = podgroup_condition("Scheduled", "tasks in gang are ready to be scheduled", "", session_uid="s2", now="t2")
    old = {"phase": "Inqueue", "conditions": [c1]}
    assert not status_changed(old, {"phase": "Inqueue", "conditions": merge_condition([c1], c2)})
    assert status_changed(old, {"phase": "Running", "conditions": [c1]})
    merged = merge_condition([c1], sched)
    assert [c["type"] for c in merged] == ["Unschedulable", "Scheduled"]
    assert status_changed(old, {"phase": "Inqueue", "conditions": merged})
