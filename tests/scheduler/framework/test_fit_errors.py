"""Evaluation.fit_errors: each infeasible node's statuses, as Evaluation.statuses gives them node by node."""

from __future__ import annotations

import random

import numpy as np
import pytest

from scheduler.framework.evaluate import Evaluation
from scheduler.framework.status import Code, FilterResult, Status


def _result(rng: random.Random, n: int, name: str) -> FilterResult:
    passed = np.array([rng.random() < 0.6 for _ in range(n)], dtype=np.bool_)
    reasons = {i: [(Code.UNSCHEDULABLE, f"{name} said no to {i}")] for i in range(n) if rng.random() < 0.3}
    two = {i: [(Code.UNSCHEDULABLE, f"{name} first"), (Code.UNRESOLVABLE, f"{name} second")] for i in range(n)}
    lazy = None if rng.random() < 0.3 else two.__getitem__
    return FilterResult(passed, reasons, lazy=lazy)


def _evaluation(seed: int) -> Evaluation:
    rng = random.Random(seed)
    n = rng.randint(1, 30)
    feasible = np.array([rng.random() < 0.3 for _ in range(n)], dtype=np.bool_)
    ones = np.ones(n, dtype=np.bool_)
    ev = Evaluation(feasible, ones, ones, [f"node-{i}" for i in range(n)])
    ev.results = [(f"plugin-{k}", _result(rng, n, f"plugin-{k}")) for k in range(rng.randint(0, 4))]
    ev.scalar = {i: [Status(Code.UNSCHEDULABLE, f"scalar {i}", "s"), Status(Code.ERROR, "more", "s")][: rng.randint(1, 2)]
                 for i in range(n) if rng.random() < 0.5}
    return ev


@pytest.mark.parametrize("seed", range(200))
def test_fit_errors_are_each_failing_nodes_first_statuses(seed: int) -> None:
    ev = _evaluation(seed)
    expected = {ev.node_names[i]: ev.statuses(i) for i in np.flatnonzero(~ev.feasible).tolist() if ev.statuses(i)}
    errors = ev.fit_errors()
    assert errors.nodes == expected
    assert list(errors.nodes) == list(expected)   # in the nodes' order, as the message's readers see them
    assert errors.total_nodes == len(ev.node_names)


def test_a_node_no_filter_failed_takes_its_first_scalar_status() -> None:
    ones = np.ones(2, dtype=np.bool_)
    ev = Evaluation(np.array([False, True]), ones, ones, ["a", "b"], [("f", FilterResult(ones.copy()))])
    ev.scalar = {0: [Status(Code.UNSCHEDULABLE, "first", "p"), Status(Code.UNSCHEDULABLE, "second", "p")]}
    assert ev.fit_errors().nodes == {"a": [Status(Code.UNSCHEDULABLE, "first", "p")]}
