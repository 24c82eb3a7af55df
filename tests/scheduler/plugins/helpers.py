"""Conf builders and explain readers for the node-plugin scenario tests."""

from __future__ import annotations

import json
import random
from typing import Any

from common.clock import to_rfc3339
from scheduler.framework.api import TaskInfo, TaskStatus
from scheduler.framework.session import Session
from tests.scheduler.factories import T0

NOW = T0 + 60  # the clock of tests.scheduler.factories.run()
GI = 1024**3


def metric(name: str, cpu_m: int, mem_gi: float, *, age: float = 30.0, avg10m: tuple[int, float] | None = None,
           ) -> dict[str, Any]:
    """A NodeMetric object reporting ``cpu_m`` millicores and ``mem_gi`` GiB in use, ``age`` seconds before NOW."""
    nm: dict[str, Any] = {"nodeUsage": {"resources": {"cpu": f"{cpu_m}m", "memory": str(int(mem_gi * GI))}}}
    if avg10m is not None:
        nm["aggregatedNodeUsages"] = [{"duration": "10m", "usage": {"avg": {"resources": {
            "cpu": f"{avg10m[0]}m", "memory": str(int(avg10m[1] * GI))}}}}]
    return {"apiVersion": "slo.loadwise.io/v1alpha1", "kind": "NodeMetric", "metadata": {"name": name}, "spec": {},
            "status": {"updateTime": to_rfc3339(NOW - age), "nodeMetric": nm}}


def conf(*plugins: str | tuple[str, dict[str, Any]] | tuple[str, dict[str, Any], int],
         actions: str = "allocate, backfill") -> str:
    """One tier holding ``plugins`` (a name, or (name, arguments[, weight])); arguments are written as JSON."""
    lines = [f'actions: "{actions}"', "tiers:", "- plugins:"]
    for p in plugins:
        if isinstance(p, str):
            lines.append(f"  - name: {p}")
            continue
        lines.append(f"  - name: {p[0]}")
        lines.append(f"    arguments: {json.dumps(p[1])}")
        if len(p) == 3:
            lines.append(f"    weight: {p[2]}")
    return "\n".join(lines) + "\n"


def scores(ssn: Session, pod_key: str, plugin: str) -> dict[str, int]:
    """The plugin's weighted score per scored node, as ``explain`` recorded it for the pod."""
    assert ssn.explain is not None
    return {node: s[plugin] for node, s in ssn.explain[pod_key].scores.items()}


def message(ssn: Session, pod_key: str) -> str:
    assert ssn.explain is not None
    return ssn.explain[pod_key].message


def filters(ssn: Session, pod_key: str) -> dict[str, dict[str, str]]:
    assert ssn.explain is not None
    return ssn.explain[pod_key].filter


def random_placement_step(rng: random.Random, ssn: Session, tasks: list[TaskInfo]) -> None:
    """One random session event for the carried-index tests: place a pending task, take back a placed one, or
    mark a running one releasing."""
    task = rng.choice(tasks)
    if task.status is TaskStatus.PENDING:
        ssn.place(task, rng.choice(ssn.nodes), rng.choice([TaskStatus.ALLOCATED, TaskStatus.PIPELINED]))
    elif task.status in (TaskStatus.ALLOCATED, TaskStatus.PIPELINED):
        ssn.unplace(task)
    elif task.status is TaskStatus.RUNNING:
        ssn.mark_releasing(task)
