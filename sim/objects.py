"""The Kubernetes objects the simulator puts into the in-memory cluster, built from the workload model.

They are ordinary API dicts, exactly what the scheduler and the agent would meet in a real cluster: nodes with
capacity/allocatable and Ready, pods without ``nodeName`` for the loadwise scheduler, PodGroups for gangs,
the PriorityClasses the pods name, a default Queue, and one NodeMetric per node.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from common.kinds import kind_info
from common.objects import GROUP_NAME_ANNOTATION
from common.resources import CPU, MEMORY, PODS, Resources
from sim.model import GroupSpec, NodeSpec, PodKind, PodSpec

__all__ = [
    "SCHEDULER_NAME",
    "KIND_LABEL",
    "CORES_LABEL",
    "INDEX_ANNOTATION",
    "node_object",
    "node_labels",
    "pod_object",
    "podgroup_object",
    "priority_class_object",
    "queue_object",
    "deterministic_uid",
    "with_uid",
]

SCHEDULER_NAME = "loadwise-scheduler"
KIND_LABEL = "sim.loadwise.io/kind"
# Node size in whole cores: WaterlinePolicies on ``cpu_total_usage`` (millicores) select nodes by it.
CORES_LABEL = "sim.loadwise.io/cores"
INDEX_ANNOTATION = "sim.loadwise.io/workload-index"
_OWNER_KIND = {PodKind.SERVICE: "ReplicaSet", PodKind.BATCH: "Job"}


_UID_NAMESPACE = uuid.UUID("6f6c6f61-6477-6973-652d-73696d756c61")


def deterministic_uid(kind: str, namespace: str, name: str) -> str:
    """A UID derived from the object's identity.

    The API server would pick random UIDs; the simulator must not, because the scheduler breaks some ties by
    UID and a rerun with the same seed has to give the same numbers.
    """
    return str(uuid.uuid5(_UID_NAMESPACE, f"{kind}/{namespace}/{name}"))


def with_uid(kind: str, obj: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of ``obj`` whose ``metadata.uid`` is set deterministically (kept if already set)."""
    out = dict(obj)
    meta = dict(out.get("metadata") or {})
    meta.setdefault("uid", deterministic_uid(kind, str(meta.get("namespace", "")), str(meta.get("name", ""))))
    out["metadata"] = meta
    return out


def _api(kind: str) -> dict[str, str]:
    return {"apiVersion": kind_info(kind).api_version, "kind": kind}


def node_labels(spec: NodeSpec) -> dict[str, str]:
    """The node's labels plus the simulator's size label (whole cores of capacity)."""
    return {**spec.labels, CORES_LABEL: str(spec.capacity_cpu // 1000)}


def node_object(spec: NodeSpec) -> dict[str, Any]:
    allocatable = Resources({CPU: spec.cpu_milli, MEMORY: spec.memory_bytes, PODS: spec.max_pods, **spec.extended})
    capacity = Resources(
        {CPU: spec.capacity_cpu, MEMORY: spec.capacity_memory, PODS: spec.max_pods, **spec.extended}
    )
    return {
        **_api("Node"),
        "metadata": {"name": spec.name, "labels": node_labels(spec), "uid": deterministic_uid("Node", "", spec.name)},
        "spec": {},
        "status": {
            "capacity": capacity.to_kube(),
            "allocatable": allocatable.to_kube(),
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}],
        },
    }


def _container_resources(spec: PodSpec) -> dict[str, dict[str, str]]:
    requests = Resources({CPU: spec.cpu_request_milli, MEMORY: spec.memory_request_bytes, **spec.extended_requests})
    # Extended resources cannot be overcommitted: their limit must equal the request.
    limits = Resources({CPU: spec.cpu_limit_milli, MEMORY: spec.memory_limit_bytes, **spec.extended_requests})
    out: dict[str, dict[str, str]] = {}
    if requests:
        out["requests"] = requests.to_kube()
    if limits:
        out["limits"] = limits.to_kube()
    return out


def pod_object(spec: PodSpec, name: str, *, index: int, scheduler_name: str = SCHEDULER_NAME) -> dict[str, Any]:
    """A pending pod for workload pod ``index`` under object name ``name`` (a re-queued pod gets a new name)."""
    annotations = {INDEX_ANNOTATION: str(index)}
    if spec.group:
        annotations[GROUP_NAME_ANNOTATION] = spec.group
    meta: dict[str, Any] = {
        "name": name,
        "namespace": spec.namespace,
        "uid": deterministic_uid("Pod", spec.namespace, name),
        "labels": {**spec.labels, KIND_LABEL: spec.kind.value},
        "annotations": annotations,
    }
    owner = _OWNER_KIND.get(spec.kind)
    if owner is not None:
        owner_name = spec.labels.get("app") or spec.labels.get("job") or spec.name
        meta["ownerReferences"] = [
            {"apiVersion": "apps/v1" if owner == "ReplicaSet" else "batch/v1", "kind": owner, "name": owner_name,
             "uid": f"sim-{owner_name}", "controller": True}
        ]
    pod_spec: dict[str, Any] = {
        "schedulerName": scheduler_name,
        "containers": [{"name": "main", "image": "registry.k8s.io/pause:3.9", "resources": _container_resources(spec)}],
        "terminationGracePeriodSeconds": 30,
    }
    if spec.priority_class_name:
        pod_spec["priorityClassName"] = spec.priority_class_name
        pod_spec["priority"] = spec.priority
    return {**_api("Pod"), "metadata": meta, "spec": pod_spec, "status": {"phase": "Pending"}}


def podgroup_object(group: GroupSpec, *, priority_class_name: str = "") -> dict[str, Any]:
    spec: dict[str, Any] = {"minMember": group.min_member, "queue": group.queue}
    if priority_class_name:
        spec["priorityClassName"] = priority_class_name
    return {
        **_api("PodGroup"),
        "metadata": {
            "name": group.name,
            "namespace": group.namespace,
            "uid": deterministic_uid("PodGroup", group.namespace, group.name),
        },
        "spec": spec,
        "status": {"phase": "Pending"},
    }


def priority_class_object(name: str, value: int) -> dict[str, Any]:
    return {
        **_api("PriorityClass"),
        "metadata": {"name": name, "uid": deterministic_uid("PriorityClass", "", name)},
        "value": value,
        "globalDefault": False,
        "preemptionPolicy": "PreemptLowerPriority",
    }


def queue_object(name: str = "default", weight: int = 1) -> dict[str, Any]:
    return {
        **_api("Queue"),
        "metadata": {"name": name, "uid": deterministic_uid("Queue", "", name)},
        "spec": {"weight": weight, "reclaimable": True},
        "status": {"state": "Open"},
    }
