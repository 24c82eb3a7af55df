"""enqueue sifts the session's jobs in C (their queues, the pending ones, the unstamped ones) and then admits as
the job-by-job walk Volcano's action does: the same jobs admitted in the same order, on random clusters of queues
with capabilities, PodGroups of every phase and size, and pods without a group."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.actions.enqueue import Enqueue
from scheduler.framework.api import JobInfo, QueueInfo
from scheduler.framework.session import PriorityQueue, Session
from tests.scheduler.factories import node, pod, podgroup, queue, session

CONF = """
actions: "enqueue"
tiers:
- plugins:
  - name: priority
  - name: gang
- plugins:
  - name: drf
  - name: proportion
"""


def _walked(ssn: Session) -> None:
    """The action job by job, as it was written before the sifting (the reference)."""
    queues: PriorityQueue[QueueInfo] = ssn.queue_queue()
    seen: set[str] = set()
    jobs: dict[str, PriorityQueue[JobInfo]] = {}
    for job in ssn.jobs.values():
        if job.schedule_start is None:
            object.__setattr__(job, "schedule_start", ssn.now)
        q = ssn.queues.get(job.queue)
        if q is None:
            continue
        if q.name not in seen:
            seen.add(q.name)
            queues.push(q)
        if job.is_pending():
            jobs.setdefault(q.name, ssn.job_queue()).push(job)
    while not queues.empty():
        q = queues.pop()
        jq = jobs.get(q.name)
        if jq is None or jq.empty():
            continue
        job = jq.pop()
        if not job.min_resources or ssn.job_enqueueable(job):
            ssn.job_enqueued(job)
            job.phase = "Inqueue"
        queues.push(q)


GROUP = st.tuples(st.sampled_from(["a", "b", "c", "missing"]), st.sampled_from(["Pending", "Inqueue", "Running", ""]),
                  st.integers(1, 3), st.integers(0, 6), st.booleans())


def _objects(groups: list[tuple[str, str, int, int, bool]], singles: int) -> list[dict[str, Any]]:
    objs: list[dict[str, Any]] = [node("n1", cpu="8"), queue("a", 2, capability={"cpu": "6"}), queue("b"),
                                  queue("c", 3, capability={"cpu": "2"})]
    for g, (q, phase, members, cpu, running) in enumerate(groups):
        pg = podgroup(f"g{g}", members, queue=q, phase=phase,
                      min_resources={"cpu": str(cpu)} if cpu else None, created=1000.0 + g % 3)
        objs.append(pg)
        objs += [pod(f"g{g}-{m}", cpu="1", group=f"g{g}", node_name="n1" if running and m == 0 else "")
                 for m in range(members)]
    objs += [pod(f"s{i}", cpu="500m", node_name="n1" if i % 2 else "") for i in range(singles)]
    return objs


def _admitted(ssn: Session) -> list[tuple[str, str, float | None]]:
    return [(uid, j.phase, j.schedule_start) for uid, j in ssn.jobs.items()]


@settings(max_examples=80, deadline=None)
@given(st.lists(GROUP, max_size=8), st.integers(0, 5))
def test_sifted_enqueue_admits_as_the_job_by_job_walk(groups: list[tuple[str, str, int, int, bool]],
                                                      singles: int) -> None:
    objs = _objects(groups, singles)
    sifted, _ = session(objs, CONF)
    walked, _ = session(objs, CONF)
    order: dict[str, list[str]] = {"sifted": [], "walked": []}
    for name, ssn in (("sifted", sifted), ("walked", walked)):
        enqueued = ssn.job_enqueued

        def note(job: JobInfo, seen: list[str] = order[name], inner: Any = enqueued) -> None:
            seen.append(job.uid)
            inner(job)
        ssn.job_enqueued = note  # type: ignore[method-assign]
    Enqueue().execute(sifted)
    _walked(walked)
    assert order["sifted"] == order["walked"]
    assert _admitted(sifted) == _admitted(walked)
