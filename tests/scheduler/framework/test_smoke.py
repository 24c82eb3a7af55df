from __future__ import annotations

from tests.scheduler.factories import node, pod, run

FIT = """
actions: "allocate, backfill"
tiers:
- plugins:
  - name: noderesources
"""


def test_least_allocated_spreads_and_fit_rejects() -> None:
    objs = [node("a", cpu="4"), node("b", cpu="8"), pod("p1", cpu="2"), pod("p2", cpu="2"), pod("p3", cpu="2"),
            pod("big", cpu="16")]
    ssn, sink = run(objs, FIT, explain=True)
    assert sink.binds["default/p1"] == "b"
    assert set(sink.binds) == {"default/p1", "default/p2", "default/p3"}
    assert ssn.explain is not None
    msg = ssn.explain["default/big"].message
    assert msg == "0/2 nodes are available: 2 Insufficient cpu."
    # no node is over-committed
    assert (ssn.arrays.idle >= 0).all()
