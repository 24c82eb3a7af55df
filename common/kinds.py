"""The API resources Loadwise reads and writes, by kind."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["KindInfo", "KINDS", "kind_info"]


@dataclass(frozen=True, slots=True)
class KindInfo:
    kind: str
    group: str
    version: str
    plural: str
    namespaced: bool

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version


KINDS: dict[str, KindInfo] = {
    k.kind: k
    for k in (
        KindInfo("Node", "", "v1", "nodes", False),
        KindInfo("Pod", "", "v1", "pods", True),
        KindInfo("Event", "", "v1", "events", True),
        KindInfo("ConfigMap", "", "v1", "configmaps", True),
        KindInfo("PriorityClass", "scheduling.k8s.io", "v1", "priorityclasses", False),
        KindInfo("Lease", "coordination.k8s.io", "v1", "leases", True),
        KindInfo("PodDisruptionBudget", "policy", "v1", "poddisruptionbudgets", True),
        KindInfo("NodeMetric", "slo.loadwise.io", "v1alpha1", "nodemetrics", False),
        KindInfo("WaterlinePolicy", "qos.loadwise.io", "v1alpha1", "waterlinepolicies", False),
        KindInfo("PodGroup", "scheduling.loadwise.io", "v1alpha1", "podgroups", True),
        KindInfo("Queue", "scheduling.loadwise.io", "v1alpha1", "queues", False),
    )
}


def kind_info(kind: str) -> KindInfo:
    try:
        return KINDS[kind]
    except KeyError:
        raise ValueError(f"unknown kind {kind!r}; known: {', '.join(sorted(KINDS))}") from None
