"""The ``loadaware-rebalance`` policy: the production rebalancer on the simulated cluster, counted on its own."""

from __future__ import annotations

import dataclasses
from typing import Any

from sim.measures import measure
from sim.policies import load_policies
from sim.run import SimOptions, run
from sim.synthetic import SyntheticConfig, generate


def _hot_afternoon(policy: str) -> Any:
    """Two afternoon hours on 12 nodes, where some nodes stay hot while others are cool.  The shipped arguments
    are made for 40 nodes and more: on 12, one low node in three and a destination that stays at 55% are rare, so
    the rebalancer here acts with one low node to spare and both ends of a move up to the high thresholds."""
    w = generate(SyntheticConfig(nodes=12, hours=2.0, seed=3))
    chosen = load_policies([policy])[0]
    if chosen.rebalance is not None:
        args = dataclasses.replace(chosen.rebalance, number_of_nodes=1, destination_thresholds={},
                                   source_thresholds={})
        chosen = dataclasses.replace(chosen, rebalance=args)
    return run(w, chosen, SimOptions(hours=2.0, start_hour=13, seed=3))


def test_rebalancer_moves_are_counted_apart_and_every_one_was_proven() -> None:
    rec = _hot_afternoon("loadaware-rebalance")
    tally = rec.rebalance
    assert rec.rebalancer_evictions == tally["evictions"] > 0
    assert tally["unproven"] == 0 and tally["moved_twice_within_hour"] == 0
    assert tally["landed_on_source"] == 0
    assert tally["destination_checks"] >= tally["evictions"]
    kinds = [k for k in tally if k.startswith("skipped: ")]
    assert kinds and not any(ch.isdigit() for k in kinds for ch in k)
    held = {k: v for k, v in tally.items() if k.startswith("rounds held: ")}
    assert 0 < sum(held.values()) < tally["rounds"]  # some rounds stopped early, some looked at pods
    assert not any(ch.isdigit() for k in held for ch in k)
    m = measure(rec)
    assert m.evictions_rebalancer == rec.rebalancer_evictions
    assert m.evictions == m.evictions_waterline + m.evictions_scheduler + m.evictions_rebalancer
    base = _hot_afternoon("loadaware-waterline")
    assert base.rebalancer_evictions == 0 and base.rebalance == {}
    assert measure(rec).hotspot_node_minutes < measure(base).hotspot_node_minutes


def test_tally_counts_lost_work_repeats_and_where_replacements_land() -> None:
    from common.clock import FakeClock
    from common.cluster.memory import MemoryCluster
    from common.resources import Resources
    from rebalancer.args import parse_rebalance_args
    from rebalancer.plan import Move
    from scheduler.conf import default_conf
    from sim.rebalance import SimRebalancer

    args = parse_rebalance_args({"highThresholds": {"cpu": 60}, "lowThresholds": {"cpu": 40}})
    sim = SimRebalancer(MemoryCluster(clock=FakeClock()), FakeClock(), default_conf(), args, tick_seconds=60)
    move = Move("ns/a", "Job/ns/a", "hot", "cool", Resources(cpu=1000), False, "cpu", {}, {}, {}, {})
    sim._moves = {"ns/a": move}
    sim.evicted("ns/a", 7, 100.0, 1800.0, restarts_from_scratch=True)  # a batch pod that had run half an hour
    sim.bound(7, "cool")
    sim.evicted("ns/b", 8, 100.0, 600.0, restarts_from_scratch=False)  # a service replica: no run time lost
    sim.evicted("ns/a", 7, 100.0 + 3599, 10.0, restarts_from_scratch=True)  # the same workload pod within the hour
    sim.bound(7, "hot")
    t = sim.tally.to_json()
    assert t["evictions"] == 3 and t["unproven"] == 1  # ns/b had no move of this round
    assert t["lost_pod_hours"] == round(1810 / 3600, 2)
    assert t["moved_twice_within_hour"] == 1
    assert (t["landed_on_destination"], t["landed_on_source"]) == (1, 1)


def test_skip_kinds_name_the_argument_that_held_a_candidate_or_the_reason() -> None:
    from sim.rebalance import skip_kind

    assert skip_kind("maxEvictionsPercent (2% of the pods per 21600 s) reached") == "maxEvictionsPercent"
    assert skip_kind("workload ReplicaSet/prod/svc-1 moved less than workloadCooldownSeconds ago") == \
        "workloadCooldownSeconds"
    assert skip_kind("node relieved less than relievedNodeCooldownSeconds ago") == "relievedNodeCooldownSeconds"
    assert skip_kind("too small: it (and the moves still allowed off the node) would leave the source hot") == \
        "too small"
    assert skip_kind("no destination: 0/3 nodes are available: 3 maxSkew exceeded") == "no destination"


def test_held_kinds_name_why_a_round_stopped_before_looking_at_pods() -> None:
    from sim.rebalance import skip_kind

    assert skip_kind("3 low node(s), not more than numberOfNodes (4)") == "numberOfNodes"
    assert skip_kind("no node confirmed hot") == "no node confirmed hot"
    assert skip_kind("paused") == "paused"
