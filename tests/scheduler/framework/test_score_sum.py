"""score_nodes sums the leading integer scores in int64 before making them float64: the totals must be those of
adding every plugin's scores to a float64 total one after another, in order (integer and fractional scores
mixed, the fractional ones anywhere)."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.framework.evaluate import score_nodes
from scheduler.framework.session import Session


class _Session:
    """What score_nodes reads of a session: its nodes, the scorers, the score mask it sets, no explanation."""

    def __init__(self, n: int, scores: list[np.ndarray]) -> None:
        self.nodes = list(range(n))
        self.explain = None
        self.score_mask: np.ndarray | None = None
        self._fns = [(f"p{k}", lambda task, s=s: s) for k, s in enumerate(scores)]

    def enabled(self, kind: str) -> list[tuple[str, Any]]:
        return self._fns if kind == "vector_score" else []


def _sequential(scores: list[np.ndarray], n: int) -> np.ndarray:
    """The totals as a float64 sum in order: the first scores made float64, each next one added."""
    if not scores:
        return np.zeros(n, dtype=np.float64)
    total = np.array(scores[0], dtype=np.float64)
    for s in scores[1:]:
        total += s
    return total


# integer scores up to 2**40 (far past any plugin's, far below 2**53) and fractional ones whose rounding in a
# float64 sum depends on the order of the additions
kinds = st.sampled_from(["int", "float", "read-only int"])


@settings(max_examples=200, deadline=None)
@given(n=st.integers(1, 12), layout=st.lists(kinds, max_size=6), seed=st.integers(0, 2**31))
def test_totals_equal_the_float_sum_in_order(n: int, layout: list[str], seed: int) -> None:
    rng = np.random.default_rng(seed)
    scores = []
    for kind in layout:
        if kind == "float":
            scores.append(rng.random(n) * 10.0 - 5.0)
        else:
            s = rng.integers(-(2**40), 2**40, n)
            if kind == "read-only int":   # as a row cache hands its scores out
                s.flags.writeable = False
            scores.append(s)
    kept = [s.copy() for s in scores]
    mask = rng.random(n) < 0.7
    got = score_nodes(_Session(n, scores), None, mask)  # type: ignore[arg-type]
    assert got.dtype == np.float64
    assert got.tolist() == _sequential(kept, n).tolist()
    assert all(np.array_equal(s, k) for s, k in zip(scores, kept, strict=True))   # no plugin's scores changed


@settings(max_examples=50, deadline=None)
@given(picks=st.lists(st.booleans(), min_size=1, max_size=12), told=st.booleans())
def test_scorers_read_the_mask_count(picks: list[bool], told: bool) -> None:
    """The scorers of a pod read how many nodes are scored from the session: the count select_best made when it
    tells score_nodes, else counted once; none is left behind once the pod is scored."""
    n = len(picks)
    mask = np.array(picks, dtype=np.bool_)
    seen: list[int] = []

    class _Counting(_Session):
        scoring_count = Session.scoring_count

    ssn = _Counting(n, [])
    ssn.score_count = None
    ssn._fns = [("p", lambda task: seen.append(ssn.scoring_count()) or np.zeros(n, dtype=np.int64))] * 2
    score_nodes(ssn, None, mask, int(mask.sum()) if told else None)  # type: ignore[arg-type]
    assert seen == [int(np.count_nonzero(mask))] * 2
    assert ssn.score_mask is None and ssn.score_count is None
    assert ssn.scoring_count() == n   # outside score_nodes: every node
