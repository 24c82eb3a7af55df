"""The rebalancer's reservations: usage on its way to a node, which the scheduler counts for a bounded time.

When the rebalancer moves a pod it proved that a destination node takes the pod and stays cool.  Until the
replacement pod runs and the node's NodeMetric shows it, nothing else would know the usage is coming, and other
pods could fill the destination first.  So the rebalancer writes the moved usage into an annotation of the
destination node; the scheduler's load-aware plugin adds every unexpired entry to the node's estimated load.  The
entries carry their own expiry, so a rebalancer that stops leaves nothing behind for longer than that.  A pod of
the reservation's own workload - the moved pod's replacement - does not see it: the reservation is its place.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from common.clock import parse_rfc3339, to_rfc3339
from common.objects import PodView
from common.resources import Resources

__all__ = ["RESERVATIONS_ANNOTATION", "Reservation", "parse_reservations", "format_reservations", "active",
           "workload_of"]

RESERVATIONS_ANNOTATION = "rebalance.loadwise.io/reservations"


@dataclass(frozen=True, slots=True)
class Reservation:
    """``usage`` of the pod ``pod`` (of ``workload``), moved off ``source``, expected on the annotated node."""

    pod: str
    workload: str
    source: str
    usage: Resources
    prod: bool
    since: float
    until: float

    def to_json(self) -> dict[str, object]:
        return {"pod": self.pod, "workload": self.workload, "source": self.source,
                "usage": dict(self.usage.as_dict()), "prod": self.prod,
                "since": to_rfc3339(self.since), "until": to_rfc3339(self.until)}


def _one(raw: object, where: str) -> Reservation:
    if not isinstance(raw, Mapping):
        raise ValueError(f"{where}: expected an object")
    usage = raw.get("usage") or {}
    if not isinstance(usage, Mapping) or not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0
                                                 for v in usage.values()):
        raise ValueError(f"{where}.usage: expected a map of resource to a non-negative integer")
    return Reservation(str(raw.get("pod", "")), str(raw.get("workload", "")), str(raw.get("source", "")),
                       Resources({str(k): int(v) for k, v in usage.items()}), bool(raw.get("prod", False)),
                       parse_rfc3339(str(raw.get("since", "")), field=f"{where}.since"),
                       parse_rfc3339(str(raw.get("until", "")), field=f"{where}.until"))


def parse_reservations(annotations: Mapping[str, str], *, node: str = "") -> list[Reservation]:
    """The node's reservations; a malformed annotation raises ValueError naming the node and entry."""
    text = annotations.get(RESERVATIONS_ANNOTATION)
    if not text:
        return []
    where = f"Node {node}: annotation {RESERVATIONS_ANNOTATION}"
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{where}: not JSON ({exc.msg})") from exc
    if not isinstance(raw, list):
        raise ValueError(f"{where}: expected a list")
    return [_one(item, f"{where}[{i}]") for i, item in enumerate(raw)]


def format_reservations(reservations: Iterable[Reservation]) -> str | None:
    """The annotation value, or ``None`` (remove the annotation) when there is none."""
    items = [r.to_json() for r in reservations]
    return json.dumps(items, separators=(",", ":"), sort_keys=True) if items else None


def active(reservations: Iterable[Reservation], now: float) -> list[Reservation]:
    return [r for r in reservations if r.until > now]


def workload_of(pod: PodView) -> str:
    """The controller that re-creates the pod (``Kind/namespace/name``), or the pod itself when it has none."""
    for ref in (pod.raw.get("metadata") or {}).get("ownerReferences") or []:
        if ref.get("controller", True):
            return f"{ref.get('kind', '')}/{pod.namespace}/{ref.get('name', '')}"
    return f"Pod/{pod.key}"
