"""The ``loadaware-rebalance`` policy: the production rebalancer on the simulated cluster, counted on its own."""

from __future__ import annotations

from typing import Any

from sim.measures import measure
from sim.policies import load_policies
from sim.run import SimOptions, run
from sim.synthetic import SyntheticConfig, generate


def _hot_afternoon(policy: str) -> Any:
    """Two afternoon hours on 12 nodes, where some nodes stay hot while others are cool."""
    w = generate(SyntheticConfig(nodes=12, hours=2.0, seed=3))
    return run(w, load_policies([policy])[0], SimOptions(hours=2.0, start_hour=13, seed=3))


def test_rebalancer_moves_are_counted_apart_and_every_one_was_proven() -> None:
    rec = _hot_afternoon("loadaware-rebalance")
    tally = rec.rebalance
    assert rec.rebalancer_evictions == tally["evictions"] > 0
    assert tally["unproven"] == 0 and tally["moved_twice_within_hour"] == 0
    assert tally["landed_on_source"] == 0
    assert tally["destination_checks"] >= tally["evictions"]
    m = measure(rec)
    assert m.evictions_rebalancer == rec.rebalancer_evictions
    assert m.evictions == m.evictions_waterline + m.evictions_scheduler + m.evictions_rebalancer
    base = _hot_afternoon("loadaware-waterline")
    assert base.rebalancer_evictions == 0 and base.rebalance == {}
    assert measure(rec).hotspot_node_minutes < measure(base).hotspot_node_minutes
