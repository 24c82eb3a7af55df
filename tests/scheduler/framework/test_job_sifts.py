"""The C-loop job sifts (``api.with_backfill_work``, ``api.unsettled_or_grouped``) select, in order, the jobs the
methods they stand for select, whatever the jobs' tasks and their statuses become during a session; overcommit's
PodGroup jobs, found by key, are in order every job with ``minResources``."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.framework.api import TaskStatus, unsettled_or_grouped, with_backfill_work
from scheduler.plugins.overcommit import podgroup_jobs
from tests.scheduler.factories import node, pod, podgroup, session

CONF = """
actions: "allocate"
tiers:
- plugins:
  - name: priority
  - name: gang
"""
STATUSES = [TaskStatus.PENDING, TaskStatus.PIPELINED, TaskStatus.ALLOCATED, TaskStatus.BINDING, TaskStatus.RUNNING]
# one pod: its cpu request ("" none: best effort), node ("" none), PodGroup ("" its own group of one)
POD = st.tuples(st.sampled_from(["", "100m", "1"]), st.sampled_from(["", "n0", "n1"]), st.sampled_from(["", "g0", "g1"]))


@settings(max_examples=60, deadline=None)
@given(st.lists(POD, max_size=10), st.lists(st.tuples(st.integers(0, 9), st.sampled_from(STATUSES)), max_size=6))
def test_sifts_select_what_the_methods_do(pods: list[tuple[str, str, str]],
                                          moves: list[tuple[int, TaskStatus]]) -> None:
    objs = [node("n0"), node("n1"), podgroup("g0", 2, min_resources={"cpu": "1"}), podgroup("g1", 1, phase="Pending"),
            podgroup("g2", 1, min_resources={"memory": "1Gi"}, phase="Running")]
    for j, (cpu, on, group) in enumerate(pods):
        objs.append(pod(f"p{j}", cpu=cpu or None, memory=None if not cpu else "64Mi", node_name=on, group=group))
    ssn, _ = session(objs, CONF)
    tasks = sorted(ssn.tasks.values(), key=lambda t: t.name)
    for which, status in moves:   # statuses moved as a session moves them
        if tasks:
            ssn.set_status(tasks[which % len(tasks)], status)
    jobs = ssn.jobs.values()
    assert list(with_backfill_work(jobs)) == [j for j in jobs if j.pending_best_effort_num() or j.waiting_task_num()]
    assert [j for j in unsettled_or_grouped(jobs) if j.may_be_unsettled()] == [
        j for j in jobs if j.may_be_unsettled()]
    assert [j for j in unsettled_or_grouped(jobs) if j.podgroup is not None] == [
        j for j in jobs if j.podgroup is not None]
    assert [j for j in podgroup_jobs(ssn) if j.min_resources] == [j for j in jobs if j.min_resources]
