"""The daemon's collector pacing: what outlives a session is frozen, and a reference cycle among frozen objects is
still freed by the next full collection, one per period."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest

from common.clock import FakeClock
from common.cluster.memory import MemoryCluster
from scheduler.conf import default_conf
from scheduler.engine import Scheduler
from scheduler.gcpacing import CollectorPacing
from tests.scheduler.factories import T0, node, pod


class _Node:
    def __init__(self) -> None:
        self.other: _Node | None = None


def _cycle() -> weakref.ref[_Node]:
    a, b = _Node(), _Node()
    a.other, b.other = b, a
    return weakref.ref(a)


@pytest.fixture
def clock() -> Iterator[list[float]]:
    now = [0.0]
    thresholds = gc.get_threshold()
    yield now
    gc.unfreeze()
    gc.set_threshold(*thresholds)


def test_survivors_are_frozen_and_a_frozen_cycle_goes_at_the_next_full_collection(clock: list[float]) -> None:
    pacing = CollectorPacing(full_every_seconds=60, clock=lambda: clock[0])
    pacing.checkpoint()   # the first session: a full collection, then the survivors frozen
    assert pacing.full_collections == 1
    cycle = _cycle()
    clock[0] = 30.0
    pacing.checkpoint()   # within the period: no full collection; the cycle is frozen with the survivors
    assert pacing.full_collections == 1 and gc.get_freeze_count() > 0
    gc.collect()
    assert cycle() is not None   # a frozen object is not collected...
    clock[0] = 60.0
    pacing.checkpoint()
    assert pacing.full_collections == 2
    assert cycle() is None       # ...until the next full collection unfreezes it


def test_stop_hands_everything_back(clock: list[float]) -> None:
    pacing = CollectorPacing(clock=lambda: clock[0])
    pacing.checkpoint()
    pacing.stop()
    assert gc.get_freeze_count() == 0


@pytest.mark.parametrize("period", [0, -1.0, float("nan")])
def test_a_period_that_is_not_positive_is_refused(period: float) -> None:
    with pytest.raises(ValueError, match="full_every_seconds"):
        CollectorPacing(full_every_seconds=period)


def test_the_scheduler_paces_the_collector_at_start_and_after_each_session(clock: list[float]) -> None:
    fake = FakeClock(T0)
    cluster = MemoryCluster(clock=fake)
    cluster.load([node("n0"), pod("p0")])
    pacing = CollectorPacing(full_every_seconds=60, clock=lambda: clock[0])
    sched = Scheduler(cluster, default_conf(), clock=fake, gc_pacing=pacing)
    sched.start()
    assert pacing.full_collections == 1 and gc.get_freeze_count() > 0
    gc.unfreeze()
    clock[0] = 60.0
    sched.run_once()
    assert pacing.full_collections == 2 and gc.get_freeze_count() > 0
    sched.stop()
    assert gc.get_freeze_count() == 0


def test_the_young_generation_is_collected_less_often_until_stop(clock: list[float]) -> None:
    before = gc.get_threshold()
    pacing = CollectorPacing(clock=lambda: clock[0], young=5000)
    pacing.checkpoint()
    assert gc.get_threshold() == (5000, *before[1:])
    pacing.checkpoint()
    assert gc.get_threshold() == (5000, *before[1:])
    pacing.stop()
    assert gc.get_threshold() == before
    with pytest.raises(ValueError, match="young"):
        CollectorPacing(young=0)
