"""NodeMetric age/expired gauges."""

from __future__ import annotations

from prometheus_client import CollectorRegistry

from scheduler.loadaware.freshness import NodeMetricFreshness
from tests.scheduler.loadaware.helpers import metric


def test_gauges_track_age_expiry_and_removed_nodes() -> None:
    reg = CollectorRegistry()
    f = NodeMetricFreshness(reg)
    f.update(["a", "b", "c"], {"a": metric("a", update=1000.0), "b": metric("b", update=800.0)}, 1030.0, 180)

    def val(name: str, node: str) -> float | None:
        return reg.get_sample_value(name, {"node": node})

    assert val("loadwise_scheduler_nodemetric_age_seconds", "a") == 30.0
    assert val("loadwise_scheduler_nodemetric_expired", "a") == 0.0
    assert val("loadwise_scheduler_nodemetric_expired", "b") == 1.0  # 230 s >= 180
    assert val("loadwise_scheduler_nodemetric_expired", "c") == 1.0 and val(
        "loadwise_scheduler_nodemetric_age_seconds", "c") is None
    f.update(["a"], {"a": metric("a", update=1000.0)}, 1180.0, 180)
    assert val("loadwise_scheduler_nodemetric_expired", "a") == 1.0  # exactly 180 s: expired (>=)
    assert val("loadwise_scheduler_nodemetric_expired", "b") is None
    # A NodeMetric that goes away takes the node's age sample with it; the node stays expired.
    f.update(["a", "b"], {"b": metric("b", update=1170.0)}, 1180.0, 180)
    assert val("loadwise_scheduler_nodemetric_age_seconds", "a") is None
    assert val("loadwise_scheduler_nodemetric_expired", "a") == 1.0
    assert val("loadwise_scheduler_nodemetric_age_seconds", "b") == 10.0
    # a node that leaves and comes back with the value it had: its expired sample is there again
    f.update(["a"], {}, 1180.0, 180)
    f.update(["a", "b"], {"b": metric("b", update=1170.0)}, 1180.0, 180)
    assert val("loadwise_scheduler_nodemetric_expired", "b") == 0.0
    # unchanged for another session: still there, with the same value
    f.update(["a", "b"], {"b": metric("b", update=1170.0)}, 1190.0, 180)
    assert val("loadwise_scheduler_nodemetric_expired", "b") == 0.0
    assert val("loadwise_scheduler_nodemetric_expired", "a") == 1.0


def test_samples_are_the_last_session_s_whatever_the_caller_does_after() -> None:
    """The samples are made at scrape time from what ``update`` got: a node named twice has one sample, and a
    caller changing its mapping afterwards does not change them."""
    reg = CollectorRegistry()
    f = NodeMetricFreshness(reg)
    metrics = {"a": metric("a", update=1000.0)}
    f.update(["a", "a"], metrics, 1030.0, 180)
    metrics["a"] = metric("a", update=1029.0)
    assert reg.get_sample_value("loadwise_scheduler_nodemetric_age_seconds", {"node": "a"}) == 30.0
    ages = [s for fam in reg.collect() for s in fam.samples if s.name == "loadwise_scheduler_nodemetric_age_seconds"]
    assert len(ages) == 1
