"""The one backoff rule the informers, the binder and the NodeMetric reporter share."""

from __future__ import annotations

import random

import pytest

from common.backoff import Backoff


def test_doubles_from_initial_up_to_the_cap() -> None:
    b = Backoff(0.2, 1.0)
    assert [b.delay(n) for n in range(1, 6)] == [0.2, 0.4, 0.8, 1.0, 1.0]


def test_a_long_outage_stays_at_the_cap() -> None:
    assert Backoff(1.0, 30.0).delay(10_000) == 30.0


def test_jitter_spreads_within_the_fraction() -> None:
    b, rng = Backoff(10.0, 10.0, jitter=0.2), random.Random(7)
    waits = [b.delay(1, rng) for _ in range(200)]
    assert all(8.0 <= w <= 12.0 for w in waits) and len(set(waits)) > 100
    assert b.delay(1) == 10.0  # no generator, no jitter


@pytest.mark.parametrize("kwargs", [{"initial": 0, "maximum": 1}, {"initial": 2, "maximum": 1},
                                    {"initial": 1, "maximum": 1, "jitter": 1.0}])
def test_refuses_nonsense(kwargs: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        Backoff(**kwargs)
    with pytest.raises(ValueError):
        Backoff(1, 1).delay(0)
