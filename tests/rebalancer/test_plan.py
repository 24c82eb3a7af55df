"""One rebalancing round: moves only while the source stays hot, only to a destination the scheduler proves."""

from __future__ import annotations

from typing import Any

from rebalancer.args import parse_rebalance_args
from rebalancer.plan import Plan, Rebalancer
from tests.rebalancer.helpers import T0, Cluster, args, conf, keys


def _plan(c: Cluster, rb: Rebalancer | None = None, now: float = T0 + 10, **kw: Any) -> Plan:
    rb = rb or Rebalancer(parse_rebalance_args(args(**kw)), conf())
    return rb.plan(c.snapshot(), now)


def _hot_and_cool(memory: int = 32) -> Cluster:
    c = Cluster(cpu=10, memory=memory)
    for n in ("hot", "cool", "warm"):
        c.node(n)
    c.pod("a", "hot", 3000)
    c.pod("b", "hot", 2500, created=T0 - 7200)
    c.pod("c", "hot", 2500, created=T0 - 9000)
    c.pod("w", "warm", 5000)
    c.pod("x", "cool", 1000)
    return c


def test_moves_the_biggest_user_to_the_node_the_scheduler_picks_and_stops_once_cool() -> None:
    plan = _plan(_hot_and_cool(), maxEvictionsPerNode=5)
    assert keys(plan.moves) == ["default/a"]  # 80% -> 50% after the first move: below 65%, so no second one
    m = plan.moves[0]
    assert (m.source, m.destination) == ("hot", "cool")
    assert m.reason == "cpu usage(80%)>threshold(65%)"
    assert (m.source_before["cpu"], m.source_after["cpu"]) == (80.0, 50.0)
    assert (m.destination_before["cpu"], m.destination_after["cpu"]) == (10.0, 40.0)


def test_usage_already_moved_counts_when_more_is_needed() -> None:
    c = _hot_and_cool()
    c.pod("d", "hot", 2000, created=T0 - 10000)  # 100%: a (30%) leaves 70%, so b (25%) goes too
    c.node("cool2")
    plan = _plan(c, maxEvictionsPerNode=5)
    assert keys(plan.moves) == ["default/a", "default/b"]
    assert plan.moves[1].source_before["cpu"] == 70.0
    assert plan.moves[1].source_after["cpu"] == 45.0
    first, second = plan.moves
    # the empty node takes the first; a node takes one moved pod per round, so the second goes to the 10% node
    assert (first.destination, second.destination) == ("cool2", "cool")
    assert first.destination_after["cpu"] == 30.0


def test_a_destination_takes_one_moved_pod_per_round_and_counts_earlier_reservations() -> None:
    c = Cluster(cpu=10, memory=32)
    for n in ("hot1", "hot2", "cool"):
        c.node(n)
    c.pod("a", "hot1", 6000)
    c.pod("b", "hot2", 6000)
    c.pod("h1", "hot1", 1000)
    c.pod("h2", "hot2", 1000)
    rb = Rebalancer(parse_rebalance_args(args(relievedNodeCooldownSeconds=0)), conf())
    plan = rb.plan(c.snapshot(), T0 + 10)
    assert [(m.pod, m.destination) for m in plan.moves] == [("default/a", "cool")]
    kept = {s.pod: s.why for s in plan.skipped}
    assert "no destination" in kept["default/b"] and "no destination" in kept["default/h2"]
    # next round, with a's reservation on cool (60%), b fits nowhere; the smaller h2 goes to the node a left
    from common.reservation import RESERVATIONS_ANNOTATION, format_reservations

    c.nodes["cool"]["metadata"]["annotations"] = {
        RESERVATIONS_ANNOTATION: format_reservations([plan.moves[0].reservation(T0 + 10, 300)]) or ""}
    c.pods = [p for p in c.pods if p["metadata"]["name"] != "a"]
    again = rb.plan(c.snapshot(), T0 + 70)
    assert [(m.pod, m.destination) for m in again.moves] == [("default/h2", "hot1")]
    assert "no node other than the source stays below" in {s.pod: s.why for s in again.skipped}["default/b"]


def test_no_eviction_when_no_other_node_takes_the_pod() -> None:
    # koordinator #2119: capacity summed over the cluster, but no single node fits the pod
    c = Cluster(cpu=10, memory=32)
    c.node("hot")
    c.node("cool")
    c.pod("big", "hot", 5000, request="9")
    c.pod("filler", "hot", 2000, request="500m")
    c.pod("small", "cool", 1000, request="2")
    plan = _plan(c)
    assert [s.pod for s in plan.skipped] == ["default/big"]
    assert "no destination" in plan.skipped[0].why and "Insufficient cpu" in plan.skipped[0].why
    assert keys(plan.moves) == ["default/filler"]


def test_no_eviction_that_would_make_the_destination_hot() -> None:
    c = Cluster(cpu=10, memory=32)
    for n in ("hot", "cool"):
        c.node(n)
    c.pod("p", "hot", 7000)
    c.pod("q", "cool", 3000)  # 30% + 70% = 100%: above 65% after the move
    plan = _plan(c)
    assert plan.moves == []
    assert "stays below its destination thresholds" in plan.skipped[0].why


def test_numberofnodes_and_anomaly_condition_hold_back() -> None:
    assert _plan(_hot_and_cool(), numberOfNodes=1).moves == []  # one low node is not more than one
    rb = Rebalancer(parse_rebalance_args(args(anomalyCondition={"consecutiveAbnormalities": 3})), conf())
    got = [len(_plan(_hot_and_cool(), rb, now=T0 + 10 + 30 * i).moves) for i in range(3)]
    assert got == [0, 0, 1]


def test_cooldowns_after_a_move() -> None:
    c = _hot_and_cool()
    rb = Rebalancer(parse_rebalance_args(args()), conf())
    first = _plan(c, rb)
    rb.record(first.moves[0], T0 + 10)
    again = _plan(c, rb, now=T0 + 40)
    assert again.moves == []
    assert "relievedNodeCooldownSeconds" in again.skipped[0].why
    rb2 = Rebalancer(parse_rebalance_args(args(relievedNodeCooldownSeconds=0)), conf())
    rb2.record(first.moves[0], T0 + 10)
    later = _plan(c, rb2, now=T0 + 40)
    assert "default/a" not in keys(later.moves)  # its workload cools down for an hour
    assert any("workloadCooldownSeconds" in s.why for s in later.skipped)


def test_limits_and_paused() -> None:
    c = _hot_and_cool()
    c.pod("d", "hot", 1500)
    c.node("cool2")
    assert len(_plan(c).moves) == 1  # maxEvictionsPerNode defaults to 1
    assert len(_plan(c, maxEvictionsPerNode=5, maxEvictionsTotal=1).moves) == 1
    paused = _plan(c, paused=True)
    assert (paused.moves, paused.note) == ([], "paused")


def test_stale_destination_is_never_chosen() -> None:
    c = _hot_and_cool()
    c.updated["cool"] = T0 - 600
    plan = _plan(c)
    assert [m.destination for m in plan.moves] in ([], ["warm"])
    assert all(m.destination != "cool" for m in plan.moves)


def test_without_nodefit_the_coolest_open_node_is_taken_unproven() -> None:
    c = Cluster(cpu=10, memory=32)
    for n in ("hot", "cool", "warm"):
        c.node(n)
    c.pod("big", "hot", 5000, request="9")  # fits no other node by requests
    c.pod("filler", "hot", 2000)
    c.pod("w", "warm", 3000)
    plan = _plan(c, nodeFit=False)
    assert [(m.pod, m.destination) for m in plan.moves] == [("default/big", "cool")]
    assert plan.checks == 1


def test_a_pod_too_small_for_the_excess_is_passed_over_for_one_that_cools_the_source() -> None:
    c = Cluster(cpu=10, memory=32)
    for n in ("hot", "cool", "cool2"):
        c.node(n)
    c.pod("be", "hot", 500, priority=5500)  # batch class: first in Koordinator's order, but 75% -> 70% stays hot
    c.pod("svc", "hot", 2000, priority=9500)  # 75% -> 55%
    c.pod("rest", "hot", 5000, priority=9500, owner="")  # a bare pod: never moved
    plan = _plan(c)
    assert keys(plan.moves) == ["default/svc"]
    assert "too small" in {s.pod: s.why for s in plan.skipped}["default/be"]
    # with room for two moves off the node, two pods its size would take 10% off: enough, so it goes first, and
    # the service follows since the node (70%) stays hot
    two = _plan(c, maxEvictionsPerNode=2)
    assert keys(two.moves) == ["default/be", "default/svc"]


def test_the_budget_across_rounds_counts_the_evictions_of_the_window() -> None:
    c = _hot_and_cool(memory=128)  # room for the requests of the idle pods
    for i in range(95):  # 100 pods in all: 2% of them is two evictions per window
        c.pod(f"idle{i}", "cool", 1, 0, owner="", request="1m")
    rb = Rebalancer(parse_rebalance_args(args(maxEvictionsPercent=2, maxEvictionsWindowSeconds=600,
                                              relievedNodeCooldownSeconds=0, workloadCooldownSeconds=0)), conf())
    first = _plan(c, rb)
    assert len(first.moves) == 1
    rb.record(first.moves[0], T0 + 10)
    rb.record(first.moves[0], T0 + 20)  # a second eviction in the window (of another round)
    held = _plan(c, rb, now=T0 + 60)
    assert held.moves == [] and "maxEvictionsPercent (2% of the pods per 600 s)" in held.skipped[0].why
    c.updated = dict.fromkeys(c.updated, T0 + 600)  # fresh NodeMetrics for the later round
    assert len(_plan(c, rb, now=T0 + 615).moves) == 1  # the first eviction left the window


def test_destination_thresholds_keep_the_destination_clearly_cool() -> None:
    c = Cluster(cpu=10, memory=32)
    for n in ("hot", "cool", "cooler"):
        c.node(n)
    c.pod("p", "hot", 2500)
    c.pod("q", "hot", 5000, owner="")
    c.pod("r", "cool", 3000, owner="")  # 30% + 25% = 55%: below the high threshold (65%), above 50%
    c.pod("s", "cooler", 2000, owner="")  # 20% + 25% = 45%
    assert [m.destination for m in _plan(c).moves] in (["cool"], ["cooler"])
    plan = _plan(c, destinationThresholds={"cpu": 50})
    assert [(m.pod, m.destination) for m in plan.moves] == [("default/p", "cooler")]
    assert plan.moves[0].destination_after["cpu"] == 45.0
    c.pod("t", "cooler", 1000, owner="")  # 30% + 25%: now neither stays at or below 50%
    assert _plan(c, destinationThresholds={"cpu": 50}).moves == []


def test_a_move_must_bring_the_source_to_its_source_thresholds() -> None:
    c = Cluster(cpu=10, memory=32)
    for n in ("hot", "cool", "cool2"):
        c.node(n)
    c.pod("small", "hot", 1500)  # 70% -> 55%: below the high threshold, above 50%
    c.pod("rest", "hot", 5500, owner="")
    assert keys(_plan(c).moves) == ["default/small"]
    plan = _plan(c, sourceThresholds={"cpu": 50})
    assert plan.moves == [] and "too small" in plan.skipped[0].why
    # the destination thresholds bound only the destination
    assert keys(_plan(c, destinationThresholds={"cpu": 50}).moves) == ["default/small"]
    c.pod("big", "hot", 2000)  # 90%: with two moves allowed, two pods its size would bring the node to 50%
    two = _plan(c, sourceThresholds={"cpu": 50}, maxEvictionsPerNode=2)
    assert keys(two.moves) == ["default/big"]  # then, at 70%, the last move allowed must reach 50% alone
    assert "too small" in {s.pod: s.why for s in two.skipped}["default/small"]


def test_low_destinations_only_as_lownodeload() -> None:
    c = Cluster(cpu=10, memory=32)
    for n in ("hot", "warm", "low"):
        c.node(n)
    c.pod("p", "hot", 1500)
    c.pod("rest", "hot", 5500, owner="")
    c.pod("w", "warm", 500, 22 * 2**30, owner="")  # 69% of memory, above the low 60%: appropriate, not low
    c.pod("l", "low", 1000, owner="", request="9500m")  # low usage, but its requests leave no room
    assert [m.destination for m in _plan(c).moves] == ["warm"]
    only_low = _plan(c, lowDestinationsOnly=True)
    assert only_low.moves == [] and "no destination" in only_low.skipped[0].why
