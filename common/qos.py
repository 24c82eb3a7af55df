"""QoS classes and priority bands.

Kubernetes QoS (Guaranteed / Burstable / BestEffort) is derived as the kubelet does; priority
bands follow Koordinator (prod 9000–9999, mid 7000–7999, batch 5000–5999, free 3000–3999) and the
pod's class is derived as docs/design/loadaware.md §3 says.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from fractions import Fraction
from typing import Any

from common.quantity import cached_quantity, parse_quantity

__all__ = [
    "KOORD_QOS_LABEL",
    "KOORD_PRIORITY_LABEL",
    "QoSClass",
    "PriorityClass",
    "qos_class",
    "priority_band",
    "koord_qos",
    "pod_priority_class",
    "QOS_RANK",
]


class QoSClass(enum.StrEnum):
    GUARANTEED = "Guaranteed"
    BURSTABLE = "Burstable"
    BEST_EFFORT = "BestEffort"


# BestEffort < Burstable < Guaranteed; unknown ranks lowest (docs/design/waterline.md §5).
QOS_RANK = {"": -1, "BestEffort": 0, "Burstable": 1, "Guaranteed": 2}


class PriorityClass(enum.StrEnum):
    """Koordinator's priority classes, with the literal values written in NodeMetric."""

    PROD = "koord-prod"
    MID = "koord-mid"
    BATCH = "koord-batch"
    FREE = "koord-free"
    NONE = "koord-none"


_BANDS = (
    (9000, 9999, PriorityClass.PROD),
    (7000, 7999, PriorityClass.MID),
    (5000, 5999, PriorityClass.BATCH),
    (3000, 3999, PriorityClass.FREE),
)

_COMPUTE = ("cpu", "memory")


def _exact(v: Any) -> Fraction:
    """The exact quantity, as kube's ``Quantity.Cmp`` compares them; strings (the usual case) memoised."""
    return cached_quantity(v) if type(v) is str else parse_quantity(v)


def _container_qos(container: Mapping[str, Any]) -> tuple[bool, bool]:
    """(sets any non-zero cpu/memory request or limit, is guaranteed on both) for one container."""
    res = container.get("resources") or {}
    limits = {k: _exact(v) for k, v in (res.get("limits") or {}).items() if k in _COMPUTE}
    requests = {k: _exact(v) for k, v in (res.get("requests") or {}).items() if k in _COMPUTE}
    any_set = any(v != 0 for v in limits.values()) or any(v != 0 for v in requests.values())
    effective_requests = {**limits, **requests}
    for name in _COMPUTE:
        if name not in limits or limits[name] == 0 or effective_requests.get(name) != limits[name]:
            return any_set, False
    return any_set, True


def qos_class(pod: Mapping[str, Any]) -> QoSClass:
    """Kubernetes QoS class of a pod; ``status.qosClass`` wins when the API server set it."""
    status_qos = (pod.get("status") or {}).get("qosClass")
    if status_qos in ("Guaranteed", "Burstable", "BestEffort"):
        return QoSClass(status_qos)
    spec = pod.get("spec") or {}
    containers = list(spec.get("containers") or []) + list(spec.get("initContainers") or [])
    any_set, guaranteed = False, True
    for c in containers:
        c_set, c_guaranteed = _container_qos(c)
        any_set = any_set or c_set
        guaranteed = guaranteed and c_guaranteed
    if not any_set:
        return QoSClass.BEST_EFFORT
    return QoSClass.GUARANTEED if guaranteed else QoSClass.BURSTABLE


def priority_band(priority: int | None) -> PriorityClass:
    if priority is None:
        return PriorityClass.NONE
    for lo, hi, cls in _BANDS:
        if lo <= priority <= hi:
            return cls
    return PriorityClass.NONE


# the labels that set a pod's Koordinator QoS and priority class (else derived from its QoS class and spec.priority)
KOORD_QOS_LABEL = "koordinator.sh/qosClass"
KOORD_PRIORITY_LABEL = "koordinator.sh/priority-class"


def koord_qos(pod: Mapping[str, Any], qos: QoSClass | None = None) -> str:
    """Koordinator QoS (LSE/LSR/LS/BE/SYSTEM): the label if valid, else from the kube QoS class (``qos`` when the
    caller already knows the pod's)."""
    label = ((pod.get("metadata") or {}).get("labels") or {}).get(KOORD_QOS_LABEL)
    if label in ("LSE", "LSR", "LS", "BE", "SYSTEM"):
        return str(label)
    return {"Guaranteed": "LSR", "Burstable": "LS", "BestEffort": "BE"}[(qos or qos_class(pod)).value]


def pod_priority_class(pod: Mapping[str, Any], koord: str | None = None) -> PriorityClass:
    """Koordinator's ``GetPodPriorityClassWithDefault``: label, then spec.priority band, then QoS (``koord`` when
    the caller already knows the pod's ``koord_qos``)."""
    label = ((pod.get("metadata") or {}).get("labels") or {}).get(KOORD_PRIORITY_LABEL)
    if label is not None:
        try:
            cls = PriorityClass(label)
        except ValueError:
            cls = PriorityClass.NONE
        if cls is not PriorityClass.NONE:
            return cls
    else:
        cls = priority_band((pod.get("spec") or {}).get("priority"))
        if cls is not PriorityClass.NONE:
            return cls
    return PriorityClass.BATCH if (koord or koord_qos(pod)) == "BE" else PriorityClass.PROD
