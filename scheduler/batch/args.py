"""Typed arguments of the batch plugins, read leniently from the conf's raw map (docs/design/scheduler.md §1.4).

As in Volcano a value of the wrong type keeps the default; a malformed SLA duration is an error
naming the key, since silently dropping an SLA would change admission.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from common.duration import parse_duration
from scheduler.batch.overcommit import overcommit_factor
from scheduler.lenient import bool_arg, int_arg

__all__ = ["OvercommitArgs", "SlaArgs", "CapacityArgs", "NodeGroupArgs"]


@dataclass(frozen=True, slots=True)
class OvercommitArgs:
    factor: float = 1.2

    @classmethod
    def from_raw(cls, raw: Mapping[str, Any]) -> OvercommitArgs:
        return cls(overcommit_factor(raw.get("overcommit-factor")))


@dataclass(frozen=True, slots=True)
class SlaArgs:
    waiting_seconds: float | None = None

    @classmethod
    def from_raw(cls, raw: Mapping[str, Any]) -> SlaArgs:
        value = raw.get("sla-waiting-time")
        if value is None or value == "":
            return cls()
        seconds = parse_duration(value, field="plugin sla argument sla-waiting-time")
        if seconds <= 0:
            raise ValueError(f"plugin sla argument sla-waiting-time: must be positive, got {value!r}")
        return cls(seconds)


@dataclass(frozen=True, slots=True)
class CapacityArgs:
    ancestor_reclaim_level: int = 0

    @classmethod
    def from_raw(cls, raw: Mapping[str, Any]) -> CapacityArgs:
        return cls(max(0, int_arg(raw, "ancestorReclaimLevel", 0)))


@dataclass(frozen=True, slots=True)
class NodeGroupArgs:
    strict: bool = True
    preferred_order: bool = False

    @classmethod
    def from_raw(cls, raw: Mapping[str, Any]) -> NodeGroupArgs:
        return cls(bool_arg(raw, "strict", True), bool_arg(raw, "enablePreferredOrder", False))
