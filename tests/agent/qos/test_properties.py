"""Hypothesis: the engine never evicts a pod no podQOS allows, never beats the rate limit, and stops at the gap."""

from __future__ import annotations

import math
from collections import deque
from fractions import Fraction

from hypothesis import given, settings
from hypothesis import strategies as st

from agent.qos.detect import Detector, above, to_fraction
from agent.qos.plan import EngineMemory, EvictionRateLimit, execute
from tests.agent.qos.factories import node, pod, policy, rule
from tests.agent.qos.test_plan import FakeActuators

POD_QOS = [{"labelSelector": {"matchLabels": {"tier": "batch"}}, "allowedActions": ["eviction"]}]

pods_st = st.lists(
    st.tuples(
        st.integers(0, 3000),  # cpu
        st.sampled_from(["batch", "web"]),
        st.sampled_from(["BestEffort", "Burstable", "Guaranteed", ""]),
        st.integers(-10, 10),  # priority
        st.booleans(),  # refused by a PDB
    ),
    min_size=0,
    max_size=12,
)


def _pods(spec: list[tuple[int, str, str, int, bool]]):  # type: ignore[no-untyped-def]
    return [pod(f"p{i}", cpu=cpu, labels={"tier": tier}, qos=q, priority=prio)
            for i, (cpu, tier, q, prio, _) in enumerate(spec)]


@settings(max_examples=150, deadline=None)
@given(spec=pods_st, used=st.integers(0, 12000), waterline=st.integers(1, 9000),
       excess=st.integers(0, 100), budget=st.integers(1, 50))
def test_evicts_only_allowed_pods_and_stops_at_the_gap(spec, used, waterline, excess, budget) -> None:  # type: ignore[no-untyped-def]
    pol = policy(rule(value=str(waterline)), pod_qos=POD_QOS, executeExcess=f"{excess}%")
    pods = _pods(spec)
    state = node(*pods, cpu=used)
    refuse = {p.key for p, s in zip(pods, spec, strict=True) if s[4]}
    act = FakeActuators(refuse=refuse)
    out = execute([Detector().evaluate(pol, r, state) for r in pol.rules], state, EngineMemory(), act,
                  EvictionRateLimit(budget, 10))
    by_key = {p.key: p for p in pods}
    attempted = act.evicted()
    assert all(by_key[k].labels["tier"] == "batch" for k in attempted)
    accepted = [a.pod for a in out.actions]
    assert not set(accepted) & refuse
    assert len(accepted) <= budget
    gap = (1 + Fraction(excess, 100)) * (used - waterline)
    if gap <= 0:
        assert attempted == []
        return
    released = [by_key[k].cpu_usage_milli for k in accepted]
    for j in range(len(released)):  # every eviction happened while the gap was still open
        assert sum(released[:j]) < gap
    allowed = [p for p in pods if p.labels["tier"] == "batch"]
    if sum(released) < gap and len(accepted) < budget:
        assert set(attempted) == {p.key for p in allowed}  # it only stops early when nothing is left


@settings(max_examples=60, deadline=None)
@given(spec=pods_st, steps=st.lists(st.floats(0.5, 20), min_size=1, max_size=15),
       max_evictions=st.integers(1, 3), window=st.sampled_from([5.0, 10.0, 30.0]))
def test_never_more_than_the_rate_limit(spec, steps, max_evictions, window) -> None:  # type: ignore[no-untyped-def]
    pol = policy(rule(value="1000"), pod_qos=POD_QOS)
    pods = _pods(spec)
    memory = EngineMemory()
    act = FakeActuators()
    det = Detector()
    limit = EvictionRateLimit(max_evictions, window)
    t = 1_000.0
    times: list[float] = []
    for dt in steps:
        t += dt
        state = node(*pods, cpu=9000, t=t)
        out = execute([det.evaluate(pol, r, state) for r in pol.rules], state, memory, act, limit)
        times += [t] * len(out.actions)
    evicted = [a for a in act.evicted()]
    assert len(evicted) == len(set(evicted))  # a pod is never evicted twice while it is still listed
    recent: deque[float] = deque()
    for at in times:
        while recent and recent[0] <= at - window:
            recent.popleft()
        recent.append(at)
        assert len(recent) <= max_evictions


_decimals = st.decimals(min_value=-1e12, max_value=1e12, allow_nan=False, allow_infinity=False, places=6)


@settings(max_examples=400, deadline=None)
@given(line=_decimals, value=st.one_of(st.floats(-1e13, 1e13), st.integers(-(2**60), 2**60)), near=st.booleans(),
       steps=st.integers(-3, 3))
def test_above_decides_as_the_exact_decimal_comparison(line: object, value: float | int, near: bool,
                                                       steps: int) -> None:
    # the float shortcut must agree with comparing the sample's decimal to the waterline exactly, also
    # within a few ulps of the line (where it has to fall back to the exact comparison)
    w = Fraction(str(line))
    if near:
        value = float(w)
        for _ in range(abs(steps)):
            value = math.nextafter(value, math.inf if steps > 0 else -math.inf)
    assert above(value, w) == (to_fraction(value) > w)


def test_above_at_the_line() -> None:
    assert not above(81.2, Fraction(406, 5)) and above(81.20000000000002, Fraction(406, 5))
    assert above(2**53 + 1, Fraction(2**53)) and not above(2**53, Fraction(2**53))


def test_above_non_finite_samples() -> None:
    assert not above(math.nan, Fraction(1)) and above(math.inf, Fraction(10**30)) and not above(-math.inf, Fraction(0))
