"""queue_usage sums per queue what the definition (Volcano's proportion and capacity) sums task by task."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pytest

from common.resources import Resources
from scheduler.batch.queue_usage import QueueUsage, gated_request, job_inqueue, queue_usage
from scheduler.framework.api import ALLOCATED_STATUS, JobInfo, TaskStatus
from tests.scheduler.factories import node, pod, podgroup, queue, session

CONF = """
actions: "enqueue, allocate"
tiers:
- plugins:
  - name: priority
  - name: gang
- plugins:
  - name: proportion
"""


def _by_definition(jobs: Iterable[JobInfo], queues: Iterable[str]) -> dict[str, QueueUsage]:
    """Resources added one by one, every task visited: what Volcano's proportion does at session open."""
    known = set(queues)
    out: dict[str, QueueUsage] = {}
    for job in jobs:
        if job.queue not in known:
            continue
        u = out.setdefault(job.queue, QueueUsage())
        for t in job.tasks_in(*ALLOCATED_STATUS):
            u.allocated = u.allocated + t.resreq
            u.request = u.request + t.resreq
        for t in job.tasks_in(TaskStatus.PENDING):
            u.request = u.request + t.resreq
        u.inqueue = u.inqueue + job_inqueue(job)
        u.elastic = u.elastic + (job.allocated - job.min_resources).clamp_nonnegative()
        if not job.is_pending():
            u.reserved = u.reserved + gated_request(job)
    return out


@pytest.mark.parametrize("seed", range(6))
def test_queue_usage_equals_the_task_by_task_sums(seed: int) -> None:
    rng = np.random.default_rng(seed)
    objs = [node(f"n{i}", cpu="16", memory="64Gi") for i in range(4)] + [queue("a"), queue("b", 2)]
    shapes = [("250m", "512Mi"), ("1", "1Gi"), ("2", "4Gi"), ("100m", None)]
    for g in range(int(rng.integers(1, 6))):
        size = int(rng.integers(1, 5))
        objs.append(podgroup(f"g{g}", int(rng.integers(1, size + 1)), queue=str(rng.choice(["a", "b", "default"])),
                             phase=str(rng.choice(["Pending", "Inqueue", "Running"])),
                             min_resources={"cpu": f"{int(rng.integers(0, 4))}", "memory": "2Gi"}
                             if rng.random() < 0.6 else None))
        for k in range(size):
            cpu, mem = shapes[int(rng.integers(len(shapes)))]
            bound = rng.random() < 0.5
            gated = {"schedulingGates": [{"name": "wait"}]} if not bound and rng.random() < 0.3 else None
            objs.append(pod(f"g{g}-{k}", cpu, mem, group=f"g{g}", node_name=f"n{k % 4}" if bound else "",
                            extra_spec=gated))
    for j in range(int(rng.integers(0, 12))):
        cpu, mem = shapes[int(rng.integers(len(shapes)))]
        objs.append(pod(f"single-{j}", cpu, mem, node_name=f"n{j % 4}" if rng.random() < 0.6 else ""))
    ssn, _ = session(objs, CONF)
    got = queue_usage(ssn.jobs.values(), ssn.queues)
    want = _by_definition(ssn.jobs.values(), ssn.queues)
    assert got == want
    assert any(u.allocated != Resources() for u in want.values())
