from __future__ import annotations

import pytest

from scheduler.batch.args import CapacityArgs, NodeGroupArgs, OvercommitArgs, SlaArgs


def test_defaults() -> None:
    assert OvercommitArgs.from_raw({}).factor == 1.2
    assert SlaArgs.from_raw({}).waiting_seconds is None
    assert CapacityArgs.from_raw({}).ancestor_reclaim_level == 0
    assert NodeGroupArgs.from_raw({}) == NodeGroupArgs(strict=True, preferred_order=False)


def test_values_and_lenient_types() -> None:
    assert OvercommitArgs.from_raw({"overcommit-factor": 2}).factor == 2.0
    assert OvercommitArgs.from_raw({"overcommit-factor": 0.9}).factor == 1.2
    assert SlaArgs.from_raw({"sla-waiting-time": "1h30m"}).waiting_seconds == 5400
    assert CapacityArgs.from_raw({"ancestorReclaimLevel": "2"}).ancestor_reclaim_level == 0
    assert CapacityArgs.from_raw({"ancestorReclaimLevel": 2}).ancestor_reclaim_level == 2
    assert NodeGroupArgs.from_raw({"strict": "false", "enablePreferredOrder": True}) == NodeGroupArgs(False, True)
    assert NodeGroupArgs.from_raw({"strict": 3}).strict is True


def test_bad_sla_names_the_key() -> None:
    with pytest.raises(ValueError, match="sla-waiting-time"):
        SlaArgs.from_raw({"sla-waiting-time": "later"})
    with pytest.raises(ValueError, match="must be positive"):
        SlaArgs.from_raw({"sla-waiting-time": "0s"})
