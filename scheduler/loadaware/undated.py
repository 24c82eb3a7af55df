"""The groups of assigned-pod entries a cache holds before it copies them (:meth:`AssignedPodCache.of_groups`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .cache import NodeEntries

__all__ = ["UndatedGroups"]


class UndatedGroups:
    """A cache's groups still to be copied and dated, as a dict of them would answer (node -> (group, time)):
    every group of a mapping, at one time, until taken, plus any set later — made without a step per node."""

    __slots__ = ("_groups", "_now", "_taken", "_more")

    def __init__(self, groups: Mapping[str, NodeEntries], now: float) -> None:
        self._groups, self._now = groups, now
        self._taken: set[str] = set()
        self._more: dict[str, tuple[NodeEntries, float]] = {}

    def pop(self, node: str, default: None = None) -> tuple[NodeEntries, float] | None:
        got = self._more.pop(node, None)
        if got is not None:
            return got
        if node in self._taken:
            return default
        group = self._groups.get(node)
        if group is None:
            return default
        self._taken.add(node)
        return group, self._now

    def __contains__(self, node: object) -> bool:
        return node in self._more or (node not in self._taken and node in self._groups)

    def __setitem__(self, node: str, value: tuple[NodeEntries, float]) -> None:
        self._taken.add(node)   # replaces the group it held
        self._more[node] = value

    def clear(self) -> None:
        self._more.clear()
        self._groups = {}
