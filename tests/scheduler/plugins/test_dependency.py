"""dependency (the seed sample's PreFilter) through whole sessions: the sample's messages as kube prints a
PreFilter rejection, readiness of every matching pod, namespaces from the snapshot."""

from __future__ import annotations

from typing import Any

from common.clock import FakeClock
from scheduler.framework.plugin import actions
from scheduler.framework.session import Session
from scheduler.framework.snapshot import Snapshot
from scheduler.plugins.dependency import NAMESPACES_KEY
from tests.scheduler.factories import T0, RecordingSink, node, pod, run
from tests.scheduler.factories import conf as parse

from .helpers import conf, message

RELY = {"rely.on.namespaces/name": "kube-system", "rely.on.pod/labs": "k8s-app=metrics-server"}


def _server(name: str, ready: bool) -> dict[str, Any]:
    p = pod(name, namespace="kube-system", node_name="a", labels={"k8s-app": "metrics-server"}, scheduler="other")
    p["status"]["conditions"] = [{"type": "Ready", "status": "True" if ready else "False"}]
    return p


def test_waits_until_every_matching_pod_is_ready() -> None:
    base = [node("a"), node("b"), pod("app", annotations=RELY), pod("free")]
    ssn, sink = run([*base, _server("ms-0", True), _server("ms-1", False)], conf("dependency"), explain=True)
    assert sink.binds.keys() == {"default/free"}
    assert message(ssn, "default/app") == "0/2 nodes are available: rely pod not ready."
    assert ssn.tasks["uid-default-app"].last_fit_message == "0/2 nodes are available: rely pod not ready."
    _, sink = run([*base, _server("ms-0", True), _server("ms-1", True)], conf("dependency"))
    assert "default/app" in sink.binds


def test_no_matching_pod_is_not_ready() -> None:
    other = pod("dns", namespace="kube-system", node_name="a", labels={"k8s-app": "dns"}, scheduler="other")
    ssn, sink = run([node("a"), other, pod("app", annotations=RELY)], conf("dependency"), explain=True)
    assert sink.binds == {}
    assert message(ssn, "default/app") == "0/1 nodes are available: rely pod not ready."


def test_missing_namespace() -> None:
    ann = {"rely.on.namespaces/name": "monitoring", "rely.on.pod/labs": "app=prometheus"}
    ssn, sink = run([node("a"), pod("app", annotations=ann)], conf("dependency"), explain=True)
    assert sink.binds == {}
    assert message(ssn, "default/app") == "0/1 nodes are available: not found namespace: monitoring."


def test_namespaces_listed_in_the_snapshot_are_authoritative() -> None:
    snap = Snapshot.from_objects([node("a"), _server("ms-0", True), pod("app", annotations=RELY)])
    snap.extra[NAMESPACES_KEY] = ["default"]  # kube-system deleted: its pods are on their way out
    sink = RecordingSink()
    ssn = Session(snap, parse(conf("dependency")), clock=FakeClock(T0 + 60), sink=sink)
    for name in ssn.conf.actions:
        actions()[name]().execute(ssn)
    assert sink.binds == {}
    assert ssn.tasks["uid-default-app"].last_fit_message == (
        "0/1 nodes are available: not found namespace: kube-system.")
