from __future__ import annotations

import pytest

from common.resources import Resources as R
from scheduler.batch.hdrf import HdrfTree, QueuePath, parse_queue_path

TOTAL = R(cpu=10000, memory=10000)


def test_parse_queue_path() -> None:
    p = parse_queue_path("dev", {"volcano.sh/hierarchy": "root/eng/dev", "volcano.sh/hierarchy-weights": "1/0.5/50"})
    assert p == QueuePath(("root", "eng", "dev"), (1.0, 1.0, 50.0))
    assert parse_queue_path("q", {}) == QueuePath(("root", "q"), (1.0, 1.0))
    with pytest.raises(ValueError, match="needs 3 weights"):
        parse_queue_path("dev", {"volcano.sh/hierarchy": "root/eng/dev", "volcano.sh/hierarchy-weights": "1/2"})
    with pytest.raises(ValueError, match="not a number"):
        parse_queue_path("dev", {"volcano.sh/hierarchy": "root/dev", "volcano.sh/hierarchy-weights": "1/x"})


def paths() -> tuple[QueuePath, QueuePath, QueuePath]:
    dev = QueuePath(("root", "eng", "dev"), (1, 1, 1))
    prod = QueuePath(("root", "eng", "prod"), (1, 1, 1))
    ops = QueuePath(("root", "ops"), (1, 1))
    return dev, prod, ops


def test_weighted_order_and_rescaling() -> None:
    dev, prod, ops = paths()
    tree = HdrfTree(TOTAL)
    tree.set_job(dev, "j1", R(cpu=4000), R(cpu=9000))
    tree.set_job(prod, "j2", R(cpu=1000), R(cpu=9000))
    tree.set_job(ops, "j3", R(cpu=3000), R(cpu=9000))
    tree.refresh()
    # eng's non-saturated children are rescaled to the smaller share (0.1): eng = 0.2 < ops 0.3
    assert tree.node_share(("root", "eng"))[0] == pytest.approx(0.2)
    assert tree.compare_queues(dev, ops) < 0
    assert tree.compare_queues(prod, dev) < 0
    heavy = QueuePath(("root", "ops"), (1, 10))
    tree2 = HdrfTree(TOTAL)
    tree2.set_job(dev, "j1", R(cpu=1000), R(cpu=9000))
    tree2.set_job(heavy, "j3", R(cpu=3000), R(cpu=9000))
    tree2.refresh()
    assert tree2.compare_queues(heavy, dev) < 0  # 0.3/10 < 0.1/1


def test_saturated_queues_go_last() -> None:
    dev, prod, ops = paths()
    tree = HdrfTree(TOTAL)
    tree.set_job(dev, "j1", R(cpu=1000), R(cpu=1000))  # got everything it asked for
    tree.set_job(ops, "j3", R(cpu=5000), R(cpu=9000))
    tree.refresh()
    assert tree.node_share(("root", "eng"))[1]
    assert tree.compare_queues(ops, dev) < 0


def test_reclaim_allows_restores_tree() -> None:
    dev, prod, ops = paths()
    tree = HdrfTree(TOTAL)
    tree.set_job(dev, "j1", R(cpu=500), R(cpu=9000))
    tree.set_job(ops, "j3", R(cpu=6000), R(cpu=9000))
    tree.refresh()
    before = tree.node_share(("root", "ops"))
    assert tree.reclaim_allows((dev, "j1", R(cpu=1000)), (ops, "j3", R(cpu=1000)))
    assert not tree.reclaim_allows((ops, "j3", R(cpu=1000)), (dev, "j1", R(cpu=500)))
    assert tree.node_share(("root", "ops")) == before
