"""Allocate's job queue read by keys pops the jobs in the order the plugins' job_order callbacks give, and falls
back to the callbacks when an enabled job-order plugin gives no key."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from common.clock import FakeClock
from scheduler.conf import DEFAULT_CONF_YAML, default_conf
from scheduler.framework.api import JobInfo
from scheduler.framework.keyed import KeyedQueue
from scheduler.framework.session import PriorityQueue, Session
from scheduler.framework.snapshot import Snapshot
from scheduler.plugins.drf import Drf
from tests.scheduler.factories import T0, RecordingSink, conf, node, pod

_job = st.tuples(st.sampled_from([-3, 0, 0, 7]), st.booleans(), st.sampled_from([0.0, 0.125, 0.5]),
                 st.sampled_from([T0, T0, T0 + 1]))


def _session(count: int, conf_text: str | None = None) -> Session:
    objects = [node("n0"), *[pod(f"p{i:02d}") for i in range(count)]]
    return Session(Snapshot.from_objects(objects), conf(conf_text) if conf_text else default_conf(),
                   clock=FakeClock(T0 + 60), sink=RecordingSink())


def _shape(ssn: Session, job: JobInfo, priority: int, ready: bool, share: float, created: float) -> None:
    job.priority, job.creation_time = priority, created
    job.min_available = 0 if ready else 5
    drf = ssn.plugins["drf"]
    assert isinstance(drf, Drf)
    drf.share[job.uid] = share


@settings(max_examples=150, deadline=None)
@given(st.lists(_job, min_size=1, max_size=12), st.lists(st.tuples(st.integers(0, 11), _job), max_size=6))
def test_keyed_queue_pops_what_the_callbacks_order(shapes: list[tuple[int, bool, float, float]],
                                                    repushed: list[tuple[int, tuple[int, bool, float, float]]]) -> None:
    """Every job pushed, some popped, changed while out of the queue and pushed again, then all popped: the same
    jobs in the same order from both queues."""
    ssn = _session(len(shapes))
    jobs = sorted(ssn.jobs.values(), key=lambda j: j.uid)
    for job, shape in zip(jobs, shapes, strict=True):
        _shape(ssn, job, *shape)
    keyed, plain = ssn.settled_job_queue(), ssn.job_queue()
    assert isinstance(keyed, KeyedQueue)
    for job in jobs:
        keyed.push(job)
        plain.push(job)
    for pops, shape in repushed:
        if len(plain) == 0:
            break
        for _ in range(pops % len(plain) + 1):
            got = keyed.pop()
            assert got is plain.pop()
        _shape(ssn, got, *shape)
        keyed.push(got)
        plain.push(got)
    assert [keyed.pop().uid for _ in range(len(keyed))] == [plain.pop().uid for _ in range(len(plain))]


def test_a_job_order_plugin_without_a_key_keeps_the_callbacks() -> None:
    ssn = _session(2)
    ssn.add_job_order_fn("gang", lambda a, b: 0)   # registered again, without a key
    assert isinstance(ssn.settled_job_queue(), PriorityQueue)
    assert "drf" in DEFAULT_CONF_YAML   # the keyed test above exercises the default conf's job orders


@settings(max_examples=20, deadline=None)
@given(st.lists(st.integers(0, 30), min_size=1, max_size=3000), st.lists(st.integers(0, 40), max_size=60),
       st.integers(0, 2**16))
def test_keyed_queue_pops_what_a_heap_of_its_entries_pops(keys: list[int], rounds: list[int], seed: int) -> None:
    """Thousands of items with many equal keys, popped and pushed again in rounds (the popped entries dropped now
    and then): the pops are a heap's of (key, push order) entries."""
    import heapq
    import random

    rng = random.Random(seed)
    queue: KeyedQueue[int] = KeyedQueue(lambda i: keys[i], range(len(keys)))
    heap = [(k, n, n) for n, k in enumerate(keys)]
    heapq.heapify(heap)
    pushed = len(keys)
    for pops in rounds:
        for _ in range(min(pops * 40, len(heap))):
            assert queue.pop() == heapq.heappop(heap)[2]
        for _ in range(rng.randrange(0, 5)):
            i = rng.randrange(len(keys))
            queue.push(i)
            heapq.heappush(heap, (keys[i], pushed, i))
            pushed += 1
        assert len(queue) == len(heap) and queue.empty() == (not heap)
    assert [queue.pop() for _ in range(len(queue))] == [heapq.heappop(heap)[2] for _ in range(len(heap))]
