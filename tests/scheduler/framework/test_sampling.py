"""Volcano's feasible-node search limit (docs/design/scheduler.md §2.9): how many nodes, where a search starts and stops,
and which actions it applies to."""

from __future__ import annotations

import numpy as np
import pytest

from common.clock import FakeClock
from common.cluster.memory import MemoryCluster
from scheduler.engine import Scheduler
from scheduler.framework.api import TaskStatus
from scheduler.framework.evaluate import SAMPLING_PLUGIN, evaluate_nodes
from scheduler.framework.sampling import NodeSampling
from scheduler.framework.session import Session
from scheduler.framework.snapshot import Snapshot
from tests.scheduler.factories import T0, RecordingSink, conf, node, pod

CONF = """
actions: "allocate, backfill"
tiers:
- plugins:
  - name: predicates
  - name: noderesources
"""


@pytest.mark.parametrize(("n", "sampling", "want"), [
    (1000, NodeSampling(), 1000),                                 # the default: every node
    (100, NodeSampling(percentage=0), 100),                       # up to minimum-feasible-nodes: every node
    (150, NodeSampling(percentage=0), 100),                       # 49% of 150 = 73, raised to the 100 minimum
    (1000, NodeSampling(percentage=0), 420),                      # 50 - 1000/125 = 42%
    (5000, NodeSampling(percentage=0), 500),                      # 50 - 40 = 10%
    (6000, NodeSampling(percentage=0), 300),                      # 50 - 48 = 2%, raised to the 5% floor
    (20000, NodeSampling(percentage=0), 1000),                    # the 5% floor
    (20000, NodeSampling(percentage=0, minimum_percentage=1), 200),  # 50 - 160 < 1: 1%
    (1000, NodeSampling(percentage=30), 300),
    (1000, NodeSampling(percentage=5), 100),                      # never under the minimum nodes
    (1000, NodeSampling(percentage=100), 1000),
    (1000, NodeSampling(percentage=250), 1000),
    (1000, NodeSampling(minimum_nodes=1000), 1000),
    (1000, NodeSampling(percentage=1, minimum_nodes=0), 10),
    (50, NodeSampling(percentage=1, minimum_nodes=0), 1),         # at least one
])
def test_nodes_to_find(n: int, sampling: NodeSampling, want: int) -> None:
    assert sampling.nodes_to_find(n) == want


def test_search_walks_on_from_where_the_last_one_stopped() -> None:
    s = NodeSampling(percentage=0)
    everything = np.ones(250, dtype=np.bool_)  # 48% of 250 = 120 nodes per search
    found, walked = s.search(everything)
    assert np.flatnonzero(found).tolist() == list(range(120)) and walked.sum() == 120 and s.offset == 120
    found, _ = s.search(everything)
    assert np.flatnonzero(found).tolist() == list(range(120, 240)) and s.offset == 240
    found, walked = s.search(everything)
    assert np.flatnonzero(found).tolist() == [*range(110), *range(240, 250)] and s.offset == 110
    assert np.array_equal(found, walked)


def test_search_checks_candidates_in_order_and_stops_at_the_limit() -> None:
    s = NodeSampling(percentage=10)  # 10% of 300 = 30, raised to 100
    candidates = np.ones(300, dtype=np.bool_)
    candidates[::3] = False
    checked: list[int] = []

    def even(i: int) -> bool:
        checked.append(i)
        return i % 2 == 0

    found, walked = s.search(candidates, even)
    got = np.flatnonzero(found).tolist()
    # feasible: even and not a multiple of 3, i.e. 2, 4, 8, 10, ...; the 100th is 298
    assert got == [i for i in range(300) if i % 2 == 0 and i % 3][:100] and got[-1] == 298
    assert checked == [i for i in range(299) if i % 3]  # candidates only, in order, none after the last found
    assert walked.sum() == 299 and s.offset == 299


def test_search_that_finds_too_few_walks_everything_and_keeps_its_start() -> None:
    s = NodeSampling(percentage=0, offset=7)  # 47% of 400 = 188 wanted
    candidates = np.zeros(400, dtype=np.bool_)
    candidates[[3, 50, 399]] = True
    found, walked = s.search(candidates)
    assert np.flatnonzero(found).tolist() == [3, 50, 399] and walked.all() and s.offset == 7
    checked: list[int] = []
    s.search(candidates, lambda i: checked.append(i) is None)
    assert checked == [50, 399, 3]  # from the start, round the end


@pytest.mark.parametrize(("kwargs", "flag"), [
    ({"minimum_nodes": -1}, "--minimum-feasible-nodes"),
    ({"minimum_percentage": -5}, "--minimum-percentage-nodes-to-find"),
    ({"minimum_percentage": 101}, "--minimum-percentage-nodes-to-find"),
    ({"percentage": 2.5}, "--percentage-nodes-to-find"),
])
def test_bad_settings_name_the_flag(kwargs: dict[str, object], flag: str) -> None:
    with pytest.raises(ValueError, match=flag):
        NodeSampling(**kwargs)  # type: ignore[arg-type]


def _session(n: int, sampling: NodeSampling | None, *, explain: bool = False) -> Session:
    objs = [node(f"n{i:03d}") for i in range(n)] + [pod("p", cpu="1", memory="1Gi")]
    return Session(Snapshot.from_objects(objs), conf(CONF), clock=FakeClock(T0), sink=RecordingSink(),
                   explain=explain, node_sampling=sampling)


def test_allocate_and_preempt_searches_stop_backfill_and_single_node_checks_do_not() -> None:
    sampling = NodeSampling(percentage=0)
    ssn = _session(250, sampling, explain=True)
    task = next(t for t in ssn.tasks.values() if t.status is TaskStatus.PENDING)
    assert evaluate_nodes(ssn, task).feasible.sum() == 120 and sampling.offset == 120
    assert evaluate_nodes(ssn, task, mode="preempt").feasible.sum() == 120 and sampling.offset == 240
    assert evaluate_nodes(ssn, task, mode="backfill").feasible.sum() == 250 and sampling.offset == 240
    one = np.zeros(250, dtype=np.bool_)
    one[200] = True
    assert evaluate_nodes(ssn, task, candidates=one).feasible.tolist() == one.tolist()
    # the explanation says which nodes the search did not reach
    evaluate_nodes(ssn, task)  # nodes 240..249 and 0..109
    entries = ssn.explain[task.key].filter  # type: ignore[index]
    assert entries["n005"] == {} and entries["n245"] == {}
    assert SAMPLING_PLUGIN in entries["n110"] and "120 feasible nodes" in entries["n110"][SAMPLING_PLUGIN]
    # without a limit (direct sessions, `loadwise explain`) every node is checked
    ssn = _session(250, None)
    task = next(t for t in ssn.tasks.values() if t.status is TaskStatus.PENDING)
    assert evaluate_nodes(ssn, task).feasible.sum() == 250


def test_the_engine_keeps_the_start_from_session_to_session() -> None:
    cluster = MemoryCluster(clock=FakeClock(T0))
    for i in range(250):
        cluster.create("Node", node(f"n{i:03d}"))
    assert Scheduler(cluster, conf(CONF), clock=FakeClock(T0 + 60)).node_sampling.nodes_to_find(250) == 250
    sched = Scheduler(cluster, conf(CONF), clock=FakeClock(T0 + 60), node_sampling=NodeSampling(percentage=0))
    for k in range(3):
        cluster.create("Pod", pod(f"p{k}", cpu="1", memory="1Gi"))
        sched.run_once()
    # each session's one search moved the start on by the 120 nodes it walked
    assert sched.node_sampling.offset == (3 * 120) % 250
    assert len(cluster.bindings) == 3
