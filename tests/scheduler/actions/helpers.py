"""Shared confs and object builders for the action scenario tests."""

from __future__ import annotations

from typing import Any

from tests.scheduler.factories import pod, podgroup

# Volcano's CI conf (less the plugins other modules provide): tier voting as most installs run it
FULL = """
actions: "enqueue, allocate, preempt, reclaim, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: overcommit
  - name: drf
    enablePreemptable: false
  - name: proportion
"""


def priority_class(name: str, value: int) -> dict[str, Any]:
    return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name}, "value": value}


def gang(name: str, n: int, min_member: int, *, cpu: str | None = "1", memory: str | None = "1Gi", running_on: str = "",
         running: int = 0, priority: int | None = None, pod_kw: dict[str, Any] | None = None,
         **pg: Any) -> list[dict[str, Any]]:
    """A PodGroup and ``n`` pods ``<name>-<i>``; the first ``running`` run on ``running_on``."""
    out = [podgroup(name, min_member, **pg)]
    for i in range(n):
        on = running_on if i < running else ""
        out.append(pod(f"{name}-{i}", cpu=cpu, memory=memory, group=name, node_name=on, priority=priority,
                       namespace=pg.get("namespace", "default"), **(pod_kw or {})))
    return out
