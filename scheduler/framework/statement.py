"""Tentative operations applied to the session at once and sent to the cluster only on commit
(docs/design/scheduler.md §2.5).  Discard undoes them in reverse order."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from .api import NodeInfo, TaskInfo, TaskStatus

if TYPE_CHECKING:
    from .session import Session

__all__ = ["Statement"]


@dataclass(slots=True)
class _Op:
    kind: str  # evict | pipeline | allocate
    task: TaskInfo
    reason: str = ""


class Statement:
    def __init__(self, ssn: Session) -> None:
        self.ssn = ssn
        self.ops: list[_Op] = []

    def evict(self, task: TaskInfo, reason: str) -> None:
        self.ssn.mark_releasing(task)
        self.ops.append(_Op("evict", task, reason))

    def pipeline(self, task: TaskInfo, node: NodeInfo, eviction_occurred: bool = False) -> None:
        self.ssn.place(task, node, TaskStatus.PIPELINED)
        task.eviction_occurred = task.eviction_occurred or eviction_occurred
        if eviction_occurred:
            task.nominated_node = node.name
        self.ops.append(_Op("pipeline", task))

    def allocate(self, task: TaskInfo, node: NodeInfo) -> None:
        self.ssn.place(task, node, TaskStatus.ALLOCATED)
        self.ops.append(_Op("allocate", task))

    def merge(self, other: Statement) -> None:
        self.ops.extend(other.ops)
        other.ops = []

    def discard(self) -> None:
        for op in reversed(self.ops):
            if op.kind == "evict":
                if op.task.status is TaskStatus.RELEASING:
                    self.ssn.unmark_releasing(op.task)
            elif op.task.status in (TaskStatus.ALLOCATED, TaskStatus.PIPELINED):
                self.ssn.unplace(op.task)
        self.ops = []

    def commit(self) -> None:
        for op in self.ops:
            if op.kind == "evict":
                if self.ssn.sink.evict(op.task, op.reason):
                    self.ssn.evicted.append(op.task.key)
                else:
                    self.ssn.unmark_releasing(op.task)
            elif op.kind == "allocate" and op.task.status is TaskStatus.ALLOCATED:
                self.ssn.dispatch(op.task)
        self.ops = []
