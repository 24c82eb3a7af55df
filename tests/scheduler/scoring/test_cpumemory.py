"""The resource scorers' sum over cpu and memory (scheduler.scoring.cpumemory): on any nodes, the weighted sum of
each scorer's own column form — least and most allocated with the non-zero requests, balanced allocation with the
requests (0 for a pod requesting neither) — for requests below, at and above what the nodes have free."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from common.objects import PodView
from scheduler.scoring.balanced import balance_two_columns
from scheduler.scoring.cpumemory import BALANCED, KINDS, CpuMemoryScores, WeightedScorer
from scheduler.scoring.inputs import ColumnInputs
from scheduler.scoring.resource_fit import allocated_columns

COLS = ("cpu", "memory", "pods")
MI = 1024**2


def _pod(cpu: int | None, memory: int | None) -> PodView:
    req = {k: v for k, v in (("cpu", f"{cpu}m" if cpu is not None else None),
                             ("memory", f"{memory}Mi" if memory is not None else None)) if v is not None}
    return PodView.parse({"metadata": {"name": "p", "namespace": "d"},
                          "spec": {"containers": [{"name": "c", "resources": {"requests": req}}]}})


def _own_forms(scorers: list[WeightedScorer], pod: PodView, alloc: np.ndarray, used: np.ndarray,
               nonzero: np.ndarray, rows: np.ndarray) -> list[int]:
    total = np.zeros(len(rows), dtype=np.int64)
    for scorer in scorers:
        if scorer.kind == BALANCED:
            inputs = ColumnInputs(("cpu", "memory"), COLS, alloc, non_zero=False)
            request = inputs.pod_request(pod)
            if not any(request):
                continue
            a, r = inputs.read(alloc, used, nonzero, rows)
            part = balance_two_columns(a, r, request)
        else:
            inputs = ColumnInputs(("cpu", "memory"), COLS, alloc, non_zero=True)
            a, r = inputs.read(alloc, used, nonzero, rows)
            part = allocated_columns(scorer.kind, a, r, inputs.pod_request(pod), [1, 1])
        total += part * scorer.weight
    out: list[int] = total.tolist()
    return out


_amount = st.integers(0, 9000)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 8000), st.integers(1, 64 * 1024), _amount, _amount, _amount, _amount),
                min_size=1, max_size=12),
       st.lists(st.tuples(st.sampled_from(KINDS), st.integers(1, 4)), min_size=1, max_size=3, unique_by=lambda s: s[0]),
       st.one_of(st.none(), st.integers(0, 9000)), st.one_of(st.none(), st.integers(0, 9000)), st.data())
def test_the_sum_equals_each_scorers_column_form(nodes: list[tuple[int, int, int, int, int, int]],
                                                 kinds: list[tuple[str, int]], cpu: int | None, memory: int | None,
                                                 data: st.DataObject) -> None:
    alloc = np.array([[c, m * MI, 110] for c, m, *_ in nodes], dtype=np.int64, order="F")
    used = np.array([[u, v * MI, 0] for _, _, u, v, _, _ in nodes], dtype=np.int64, order="F")
    nonzero = np.array([[u, v * MI] for *_, u, v in nodes], dtype=np.int64, order="F")
    scorers = [WeightedScorer(kind, weight) for kind, weight in kinds]
    pod = _pod(cpu, memory)
    rows = np.array(data.draw(st.lists(st.integers(0, len(nodes) - 1), min_size=1, max_size=3 * len(nodes))),
                    dtype=np.intp)
    got = CpuMemoryScores(scorers, COLS, alloc, used, nonzero).of(pod).rows(rows).tolist()
    assert got == _own_forms(scorers, pod, alloc, used, nonzero, rows)


def test_arrays_without_cpu_and_memory_on_every_node_are_not_usable() -> None:
    alloc = np.array([[4000, 8 * 1024 * MI, 110], [0, 8 * 1024 * MI, 110]], dtype=np.int64, order="F")
    assert not CpuMemoryScores.usable(COLS, alloc)
    assert CpuMemoryScores.usable(COLS, alloc[:1])
    assert not CpuMemoryScores.usable(("memory", "cpu", "pods"), alloc[:1])
