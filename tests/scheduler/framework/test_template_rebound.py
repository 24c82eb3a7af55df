"""``TaskTemplate.rebound``: the template of a new version of a pod made from the old version's template is what
``TaskTemplate.of`` makes of the new version, over random sequences of versions (the views refreshed or parsed in
full, as the scheduler cache makes them), and a bind or status update takes that way."""

from __future__ import annotations

from dataclasses import fields
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from common.objects import GROUP_NAME_ANNOTATION, PodView
from scheduler.framework.api import PREEMPTABLE_KEY, TASK_PRIORITY_KEY, TASK_SPEC_KEY
from scheduler.framework.template import TaskTemplate
from tests.common.test_pod_refresh import _EVENT, _base, _next, _parsed

COLUMNS = {"cpu": 0, "memory": 1, "pods": 2}
# the pod's task flags, read from its annotations or labels, and its PodGroup
_FLAGS = st.dictionaries(st.sampled_from([PREEMPTABLE_KEY, TASK_SPEC_KEY, TASK_PRIORITY_KEY, GROUP_NAME_ANNOTATION]),
                         st.sampled_from(["true", "false", "r1", "5", "g"]), max_size=3)
_EVENTS = st.one_of(_EVENT, st.fixed_dictionaries({}, optional={"annotations": _FLAGS, "labels": _FLAGS,
                                                                 "node": st.sampled_from(["a", "b"])}))


def _fields(t: TaskTemplate) -> dict[str, Any]:
    out = {f.name: getattr(t, f.name) for f in fields(t)}
    out["vector"], out["packed"] = t.vector.tolist(), t.packed.tolist()
    return out


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(_EVENTS, st.booleans()), min_size=1, max_size=8))
def test_a_rebound_template_is_what_a_template_of_the_new_version_is(
        events: list[tuple[dict[str, Any], bool]]) -> None:
    cur = _base()
    view = PodView.parse(cur)
    template = TaskTemplate.of(view, COLUMNS)
    for event, share in events:
        new = _next(cur, event, share)
        full = _parsed(new)
        if not isinstance(full, PodView):
            continue
        nxt = view.refreshed(new) or full
        want = TaskTemplate.of(nxt, COLUMNS)
        got = template.rebound(view, nxt)
        if got is not None:
            assert _fields(got) == _fields(want)
        cur, view, template = new, nxt, got or want


def test_a_bind_and_a_start_take_the_fast_way() -> None:
    cur = _base()
    view = PodView.parse(cur)
    template = TaskTemplate.of(view, COLUMNS)
    for event in ({"node": "a"}, {"status": {"phase": "Running"}}):
        new = _next(cur, event, True)
        nxt = view.refreshed(new)
        assert nxt is not None
        got = template.rebound(view, nxt)
        assert got is not None and _fields(got) == _fields(TaskTemplate.of(nxt, COLUMNS))
        cur, view, template = new, nxt, got
    assert template.node_name == "a" and template.status.name == "RUNNING"
