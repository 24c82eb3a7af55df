"""The quota steps on integers give exactly the steps of plain ``Fraction`` arithmetic (docs/design/waterline.md
§6.4, §6.5): the reference below is that arithmetic, written the obvious way."""

from __future__ import annotations

from fractions import Fraction

from hypothesis import given, settings
from hypothesis import strategies as st

from agent.qos.state import ContainerState, PodState
from agent.qos.throttle import (
    BINDING,
    ELASTIC_CPU,
    IDLE,
    MIN_QUOTA_US,
    UNLIMITED_ABOVE_MILLI,
    Step,
    container_bounds,
    restore_step,
    step_down,
    step_up,
)
from tests.agent.qos.factories import container, pod


def _quota(milli: Fraction, period: int) -> int:
    return max(int(milli * period / 1000), MIN_QUOTA_US)


def _down(p: PodState, c: ContainerState, ratio: int, min_ratio: int, share: Fraction | None) -> Step | None:
    usage, period = Fraction(c.cpu_usage_milli), c.cpu_period_us
    if usage <= 0:
        return None
    new = (usage if c.unlimited else Fraction(c.cpu_quota_us * 1000, period)) * (100 - ratio) / 100
    if share is not None:
        new = max(new, usage - share)
    request, limit = container_bounds(p, c)
    new = max(new, Fraction(request)) if request else new
    new = max(new, Fraction(limit * min_ratio, 100)) if limit else new
    quota = _quota(new, period)
    if not c.unlimited and (quota == c.cpu_quota_us or (share is not None and quota > c.cpu_quota_us)):
        return None
    return Step(quota, period, max(Fraction(0), usage - Fraction(quota * 1000, period)))


def _up(p: PodState, c: ContainerState, ratio: int, original: int | None, capacity: int) -> Step | None:
    if c.unlimited:
        return None
    period = c.cpu_period_us
    new = Fraction(c.cpu_quota_us * 1000, period) * (100 + ratio) / 100
    _, limit = container_bounds(p, c)
    elastic = c.limits[ELASTIC_CPU] or c.requests[ELASTIC_CPU]
    lift = not limit and not elastic and new > UNLIMITED_ABOVE_MILLI
    new = min(new, Fraction(limit)) if limit else Fraction(elastic * 1000) if elastic else new
    if original is not None and original > 0 and original >= c.cpu_quota_us:
        new, lift = min(new, Fraction(original * 1000, period)), False
    elif original is not None and original <= 0 and capacity and new >= capacity:
        lift = True
    if lift:
        return Step(-1, period, Fraction(0))
    quota = _quota(new, period)
    if quota == c.cpu_quota_us:
        return None
    return Step(quota, period, max(Fraction(0), Fraction(quota * 1000, period) - c.cpu_usage_milli))


def _restore(p: PodState, c: ContainerState, ratio: int, share: Fraction, original: int, capacity: int) -> Step | None:
    if c.unlimited:
        return None
    period, usage = c.cpu_period_us, Fraction(c.cpu_usage_milli)
    current = Fraction(c.cpu_quota_us * 1000, period)
    if usage < current * IDLE:
        return None if original == c.cpu_quota_us else Step(original if original > 0 else -1, period, Fraction(0))
    if usage < current * BINDING or share <= 0:
        return None
    step = _up(p, c, ratio, original, capacity)
    if step is None or step.quota_us < 0:
        return step
    quota = min(step.quota_us, int((current + share) * period / 1000))
    if quota <= c.cpu_quota_us:
        return None
    return Step(quota, period, max(Fraction(0), Fraction(quota * 1000, period) - usage))


_quotas = st.one_of(st.just(-1), st.integers(1, 20_000_000))
_periods = st.one_of(st.sampled_from([100_000, 50_000, 33_333]), st.integers(1000, 1_000_000))
_shares = st.fractions(min_value=-50_000, max_value=200_000, max_denominator=10_000)
_milli = st.one_of(st.just(0), st.integers(1, 100_000))


@st.composite
def _cases(draw: st.DrawFn) -> tuple[PodState, ContainerState]:
    elastic = draw(st.sampled_from([0, 0, 0, 3]))
    c = container("c", usage=draw(st.integers(0, 200_000)), quota=draw(_quotas), period=draw(_periods),
                  request=draw(_milli), limit=draw(_milli), **{ELASTIC_CPU: elastic})
    return pod("p", containers=(c,)), c


@settings(max_examples=3000, deadline=None)
@given(_cases(), st.integers(0, 100), st.integers(0, 100), st.one_of(st.none(), _shares))
def test_step_down_is_the_fraction_step(case: tuple[PodState, ContainerState], ratio: int, min_ratio: int,
                                        share: Fraction | None) -> None:
    p, c = case
    assert step_down(p, c, step_ratio=ratio, min_ratio=min_ratio, share_milli=share) == _down(p, c, ratio, min_ratio,
                                                                                               share)


@settings(max_examples=3000, deadline=None)
@given(_cases(), st.integers(0, 100), st.one_of(st.none(), _quotas), st.sampled_from([0, 4000, 64_000]))
def test_step_up_is_the_fraction_step(case: tuple[PodState, ContainerState], ratio: int, original: int | None,
                                      capacity: int) -> None:
    p, c = case
    assert step_up(p, c, step_ratio=ratio, original_quota_us=original, node_capacity_milli=capacity) == _up(
        p, c, ratio, original, capacity)


@settings(max_examples=3000, deadline=None)
@given(_cases(), st.integers(0, 100), _shares, _quotas, st.sampled_from([0, 4000, 64_000]))
def test_restore_step_is_the_fraction_step(case: tuple[PodState, ContainerState], ratio: int, share: Fraction,
                                           original: int, capacity: int) -> None:
    p, c = case
    got = restore_step(p, c, step_ratio=ratio, share_milli=share, original_quota_us=original,
                       node_capacity_milli=capacity)
    assert got == _restore(p, c, ratio, share, original, capacity)
