"""``PodView.refreshed``: the view of a new version of a pod made from the old view gives what a full parse gives,
over random sequences of versions (bind, status updates, relabelling, deletion, and changes that need a full
parse), and takes the fast way for the common ones."""

from __future__ import annotations

import copy
import marshal
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from common.clock import to_rfc3339
from common.objects import PodView

T0 = 1_700_000_000.0
Pod = dict[str, Any]

_LABELS = st.one_of(
    st.none(),
    st.dictionaries(st.sampled_from(["app", "koordinator.sh/qosClass", "koordinator.sh/priority-class", "tier"]),
                    st.sampled_from(["x", "y", "LS", "BE", "LSR", "koord-batch", "koord-prod", "bogus"]),
                    max_size=3),
    st.just({"app": 3}),           # not a string: a full parse refuses it
    st.just("app=x"),              # not an object
)
_CONDITIONS = st.one_of(
    st.none(),
    st.lists(st.fixed_dictionaries({"type": st.sampled_from(["Ready", "PodScheduled"]),
                                    "status": st.sampled_from(["True", "False"])}), max_size=3),
    st.just("Ready"),              # not a list
    st.just(["Ready"]),            # an item that is not an object
)
_START = st.one_of(st.none(), st.sampled_from([to_rfc3339(T0 + 5), to_rfc3339(T0 + 9), "yesterday"]))
_STATUS = st.one_of(
    st.fixed_dictionaries({}, optional={"phase": st.sampled_from(["Pending", "Running", "Succeeded", "Failed", ""]),
                                        "startTime": _START, "conditions": _CONDITIONS}),
    st.none(),
    st.just(["Running"]),          # not an object
)


def _spec_change(spec: dict[str, Any], which: str) -> None:
    """A change of what a refresh may not keep (it parses the pod in full)."""
    if which == "cpu":
        spec["containers"] = [{"name": "c", "image": "i", "resources": {"requests": {"cpu": "3"}}}]
    elif which == "priority":
        spec["priority"] = 7
    elif which == "gate":
        spec["schedulingGates"] = [{"name": "g"}]
    elif which == "tolerations":
        spec["tolerations"] = [{"key": "k", "operator": "Exists"}]
    elif which == "spread":
        spec["topologySpreadConstraints"] = [{"maxSkew": "one"}]   # refused by a full parse


_EVENT = st.fixed_dictionaries({}, optional={
    "node": st.one_of(st.none(), st.sampled_from(["", "a", "b"])),
    "status": _STATUS,
    "labels": _LABELS,
    "annotations": _LABELS,
    "deleting": st.booleans(),
    "owner": st.sampled_from(["ReplicaSet", "DaemonSet"]),
    "created": st.sampled_from([to_rfc3339(T0 + 1), "soon"]),
    "uid": st.just("other-uid"),
    "spec": st.sampled_from(["cpu", "priority", "gate", "tolerations", "spread"]),
    "metadata": st.just("broken"),
})


def _base() -> Pod:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "namespace": "ns", "uid": "u1", "labels": {"app": "x"},
                         "annotations": {"a": "1"}, "creationTimestamp": to_rfc3339(T0),
                         "ownerReferences": [{"kind": "ReplicaSet", "name": "rs", "controller": True}]},
            "spec": {"schedulerName": "loadwise-scheduler", "priority": 3,
                     "containers": [{"name": "c", "image": "i",
                                     "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]},
            "status": {"phase": "Pending"}}


def _next(cur: Pod, event: dict[str, Any], share: bool) -> Pod:
    """The version after ``cur`` with ``event`` applied: copy-on-write as the in-memory API server makes it
    (unchanged parts shared) when ``share``, else a deep copy (as a watch over the wire delivers it)."""
    new: Pod = {**cur, "metadata": dict(cur["metadata"]), "spec": dict(cur["spec"])}
    if not share:
        new = copy.deepcopy(new)
    meta, spec = new["metadata"], new["spec"]
    if "node" in event:
        if event["node"] is None:
            spec.pop("nodeName", None)
        else:
            spec["nodeName"] = event["node"]
    if "status" in event:
        new["status"] = event["status"]
    for key in ("labels", "annotations"):
        if key in event:
            meta[key] = copy.deepcopy(event[key])
    if "deleting" in event:
        if event["deleting"]:
            meta["deletionTimestamp"] = to_rfc3339(T0 + 60)
        else:
            meta.pop("deletionTimestamp", None)
    if "owner" in event:
        meta["ownerReferences"] = [{"kind": event["owner"], "name": "o", "controller": True}]
    if "created" in event:
        meta["creationTimestamp"] = event["created"]
    if "uid" in event:
        meta["uid"] = event["uid"]
    if "spec" in event:
        _spec_change(spec, event["spec"])
    if "metadata" in event:
        new["metadata"] = event["metadata"]
    return new


def _parsed(obj: Pod) -> PodView | str:
    try:
        return PodView.parse(obj)
    except ValueError as exc:
        return str(exc)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(_EVENT, st.booleans()), min_size=1, max_size=8))
def test_a_refreshed_view_is_what_a_full_parse_gives(events: list[tuple[dict[str, Any], bool]]) -> None:
    cur = _base()
    view = PodView.parse(cur)
    for event, share in events:
        new = _next(cur, event, share)
        full = _parsed(new)
        got = view.refreshed(new)
        if got is not None:
            assert got == full
            assert got.raw is new
            assert got.requests is view.requests      # the parsed requests are kept
            # the spec's serialisation kept only while it is the spec's (signatures read it for the spec)
            assert got.spec_bytes is None or got.spec_bytes == marshal.dumps(new["spec"], 2)
        if isinstance(full, PodView):
            cur, view = new, (got or full)


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(["", "a"]), _START.filter(lambda t: t != "yesterday"),
       st.lists(st.fixed_dictionaries({"type": st.just("Ready"), "status": st.sampled_from(["True", "False"])}),
                max_size=2),
       st.sampled_from(["Pending", "Running", "Succeeded"]), st.booleans())
def test_binds_and_status_updates_take_the_fast_way(node: str, start: str | None, conditions: list[dict[str, str]],
                                                    phase: str, share: bool) -> None:
    cur = _base()
    view = PodView.parse(cur)
    status: dict[str, Any] = {"phase": phase, "conditions": conditions}
    if start is not None:
        status["startTime"] = start
    new = _next(cur, {"node": node, "status": status, "labels": {"app": "x"}}, share)
    got = view.refreshed(new)
    assert got is not None
    assert got == PodView.parse(new)
    assert got.labels is view.labels          # equal labels: the old view's mapping is kept


def test_a_relabelled_pod_reads_its_koordinator_classes_again() -> None:
    cur = _base()
    view = PodView.parse(cur)
    new = _next(cur, {"labels": {"koordinator.sh/qosClass": "BE"}}, True)
    got = view.refreshed(new)
    assert got is not None and got.koord_qos == "BE" and view.koord_qos != "BE"
    assert got == PodView.parse(new)


def test_a_view_made_slot_by_slot_is_what_the_constructor_makes() -> None:
    """``_make_pod_view`` sets every field ``PodView(...)`` sets, to the same value (raw included, which equality
    does not compare)."""
    from dataclasses import fields

    from common.objects import _make_pod_view

    view = PodView.parse(_base())
    values = {f.name: getattr(view, f.name) for f in fields(PodView)}
    made, direct = _make_pod_view(*values.values()), PodView(**values)
    assert type(made) is PodView and made == direct and made.raw is direct.raw
    assert all(getattr(made, f.name) is getattr(direct, f.name) for f in fields(PodView))
