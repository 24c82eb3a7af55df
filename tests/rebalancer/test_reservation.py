"""The reservation ledger: the scheduler counts usage on its way to a node, for a bounded time."""

from __future__ import annotations

from dataclasses import replace

import pytest

from common.reservation import RESERVATIONS_ANNOTATION, Reservation, format_reservations, parse_reservations
from common.resources import Resources
from rebalancer.args import parse_rebalance_args
from rebalancer.plan import Rebalancer
from tests.rebalancer.helpers import CONF, T0, Cluster, args, conf
from tests.scheduler.factories import pod, run


def _reservation(until: float, workload: str = "ReplicaSet/default/web") -> Reservation:
    return Reservation("default/moved", workload, "hot", Resources(cpu=6000, memory=1 << 30), True, T0, until)


def _cluster(reserved_until: float | None) -> Cluster:
    c = Cluster(cpu=10, memory=32)
    c.node("busy")
    annotations = {}
    if reserved_until is not None:
        text = format_reservations([_reservation(reserved_until)])
        assert text is not None
        annotations = {RESERVATIONS_ANNOTATION: text}
    c.node("reserved", annotations=annotations)
    c.pod("load", "busy", 5000)
    return c


def _placed(c: Cluster, now: float, owner: str = "") -> str | None:
    new = pod("new", cpu="1", memory="1Gi")
    if owner:
        new["metadata"]["ownerReferences"] = [{"kind": "ReplicaSet", "name": owner, "uid": owner, "controller": True}]
    _, sink = run([*c.objects(), new], CONF, now=now)
    return sink.binds.get("default/new")


def test_scheduler_counts_an_unexpired_reservation_as_load() -> None:
    assert _placed(_cluster(None), T0 + 10) == "reserved"  # 0% against 50%: the emptier node
    # 60% reserved + the pod's estimate (0.85 cores) lifts it above the 65% threshold: the pod goes to the other node
    assert _placed(_cluster(T0 + 300), T0 + 10) == "busy"
    assert _placed(_cluster(T0 + 5), T0 + 10) == "reserved"  # expired: counts no more


def test_the_moved_pods_replacement_takes_its_reservations_place() -> None:
    # a pod of the reserved workload does not see that reservation: it is the pod the place was kept for
    assert _placed(_cluster(T0 + 300), T0 + 10, owner="web") == "reserved"
    assert _placed(_cluster(T0 + 300), T0 + 10, owner="other") == "busy"


def _steering(reserved_load: int) -> Cluster:
    """An empty node, and a node carrying ``reserved_load`` millicores and a reservation for workload web."""
    c = Cluster(cpu=10, memory=32)
    c.node("cool")
    text = format_reservations([replace(_reservation(T0 + 300), usage=Resources(cpu=500, memory=1 << 28))])
    assert text is not None
    c.node("reserved", annotations={RESERVATIONS_ANNOTATION: text})
    c.pod("load", "reserved", reserved_load)
    return c


def test_the_replacement_is_steered_to_its_reserved_node_while_it_passes_the_filters() -> None:
    # the empty node scores higher, yet the replacement goes where its place was kept; any other pod goes by score
    assert _placed(_steering(4000), T0 + 10, owner="web") == "reserved"
    assert _placed(_steering(4000), T0 + 10, owner="other") == "cool"
    # 60% + the pod's estimate (0.85 cores) is above the 65% threshold: the filter wins over the reservation
    assert _placed(_steering(6000), T0 + 10, owner="web") == "cool"


def test_annotation_round_trip_and_errors_name_the_node() -> None:
    text = format_reservations([_reservation(T0 + 300)])
    assert text is not None
    assert parse_reservations({RESERVATIONS_ANNOTATION: text}, node="n") == [_reservation(T0 + 300)]
    assert format_reservations([]) is None
    with pytest.raises(ValueError, match="Node n: annotation rebalance.loadwise.io/reservations"):
        parse_reservations({RESERVATIONS_ANNOTATION: "[{\"usage\": {\"cpu\": -1}}]"}, node="n")
    with pytest.raises(ValueError, match="not JSON"):
        parse_reservations({RESERVATIONS_ANNOTATION: "{"}, node="n")


def test_reservation_ends_when_the_workloads_new_pod_starts_there() -> None:
    c = _cluster(T0 + 300)
    rb = Rebalancer(parse_rebalance_args(args()), conf())
    snap = c.snapshot()
    node = next(n for n in snap.nodes if n.name == "reserved")
    assert len(rb.live_reservations(node.annotations, "reserved", snap, T0 + 10)) == 1
    arrived = c.pod("web-2", "reserved", 1000, created=T0 + 5)
    arrived["metadata"]["ownerReferences"][0]["name"] = "web"
    snap = c.snapshot()
    assert rb.live_reservations(node.annotations, "reserved", snap, T0 + 10) == []
