"""kube's NodeResourcesFit ``ignoredResources`` / ``ignoredResourceGroups``: an extended resource named there (or
in that domain) is not checked — by the plugin's filter nor by the session's own resource check — so a pod asking
for it is placed on nodes that do not advertise it (kube's fitsRequest skips it; an extender accounts for it).
Only extended resources can be ignored: cpu, memory and kubernetes.io names are always checked."""

from __future__ import annotations

from typing import Any

import pytest

from tests.scheduler.factories import node, pod, run

from .helpers import conf

FOO = "example.com/foo"


def _asking(resource: str, amount: str = "1", cpu: str = "1") -> dict[str, Any]:
    obj = pod("p", cpu=cpu)
    obj["spec"]["containers"][0]["resources"]["requests"][resource] = amount
    return obj


@pytest.mark.parametrize("args", [{"ignoredResources": [FOO]}, {"ignoredResourceGroups": ["example.com"]}])
def test_an_ignored_extended_resource_is_not_checked(args: dict[str, Any]) -> None:
    _, sink = run([node("a", cpu="4"), _asking(FOO)], conf(("noderesources", args)))
    assert sink.binds == {"default/p": "a"}


def test_without_the_argument_it_is_checked() -> None:
    ssn, sink = run([node("a", cpu="4"), _asking(FOO)], conf("noderesources"))
    assert sink.binds == {}
    assert "Insufficient example.com/foo" in ssn.tasks[next(iter(ssn.tasks))].last_fit_message


@pytest.mark.parametrize(("resource", "args"), [
    ("cpu", {"ignoredResources": ["cpu"]}),                                  # not an extended resource
    ("kubernetes.io/foo", {"ignoredResourceGroups": ["kubernetes.io"]}),     # a native (prefixed) resource
    ("other.com/foo", {"ignoredResourceGroups": ["example.com"]}),           # another group
])
def test_only_extended_resources_named_or_in_the_group_are_ignored(resource: str, args: dict[str, Any]) -> None:
    pending = _asking(resource, amount="8") if resource != "cpu" else pod("p", cpu="8")
    _, sink = run([node("a", cpu="4"), pending], conf(("noderesources", args)))
    assert sink.binds == {}
