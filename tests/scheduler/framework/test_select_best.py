"""select_best's candidates with the highest total: the same nodes, in the same order, whether every node is a
candidate (read in place) or some are (the others put below every candidate), so the random tie-break picks the same."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.framework.evaluate import _top


@settings(max_examples=200, deadline=None)
@given(totals=st.lists(st.sampled_from([0.0, 1.0, 2.5, 3.0, -1.0]), min_size=1, max_size=30),
       data=st.data())
def test_top_candidates_match_the_indexed_form(totals: list[float], data: st.DataObject) -> None:
    total = np.array(totals, dtype=np.float64)
    full = data.draw(st.booleans())
    mask = np.ones(len(totals), dtype=np.bool_) if full else np.array(
        data.draw(st.lists(st.booleans(), min_size=len(totals), max_size=len(totals))), dtype=np.bool_)
    count = int(np.count_nonzero(mask))
    if count == 0:
        return
    idx = np.flatnonzero(mask)
    sub = total[idx]
    assert _top(total, mask, count).tolist() == idx[sub == sub.max()].tolist()
