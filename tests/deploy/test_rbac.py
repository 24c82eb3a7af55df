"""RBAC in deploy/ against the API calls the code really makes (read from the code, tests/deploy/api_calls.py).

Both directions: a call the role lacks fails (the component would get 403 in a cluster), and a rule no
code uses fails too (least privilege is kept, not just promised).  Observe mode must lack exactly the
actuation calls; enforce adds exactly those.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import pytest

from agent.doctor import AGENT_API_ACCESS
from loadwise.cmd_rebalancer import DEFAULT_LEASE as REBALANCER_LEASE
from scheduler.leader import LeaseConfig
from tests.deploy.api_calls import GRANTED_TO_EVERYONE, ApiCall, Permission, scan
from tests.deploy.kustomize import DEPLOY, build

NAMESPACE = "loadwise-system"
SERVICE_ACCOUNTS = {"agent": "loadwise-agent", "scheduler": "loadwise-scheduler", "rebalancer": "loadwise-rebalancer"}
# what only the enforce overlay grants the agent: waterline evictions and its node's taint and condition
ENFORCE_ONLY = {
    Permission("", "pods/eviction", "create"),
    Permission("", "nodes", "patch"),
    Permission("", "nodes/status", "patch"),
}


@cache
def rendered(overlay: str) -> tuple[dict[str, Any], ...]:
    return tuple(build(DEPLOY / "overlays" / overlay))


def rules_for(objects: tuple[dict[str, Any], ...], account: str) -> list[tuple[str, dict[str, Any]]]:
    """(namespace or "" for cluster-wide, rule) for every rule bound to the service account."""
    roles = {
        (o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"]): o
        for o in objects
        if o["kind"] in ("Role", "ClusterRole")
    }
    out = []
    for b in objects:
        if b["kind"] not in ("RoleBinding", "ClusterRoleBinding"):
            continue
        if not any(
            s["kind"] == "ServiceAccount" and s["name"] == account and s.get("namespace") == NAMESPACE
            for s in b["subjects"]
        ):
            continue
        ns = b["metadata"].get("namespace", "") if b["kind"] == "RoleBinding" else ""
        ref = b["roleRef"]
        role = roles.get((ref["kind"], ns if ref["kind"] == "Role" else "", ref["name"]))
        assert role is not None, f"{b['kind']} {b['metadata']['name']} refers to a missing {ref['kind']} {ref['name']}"
        out.extend((ns, r) for r in role["rules"])
    return out


def granted(objects: tuple[dict[str, Any], ...], account: str) -> set[Permission]:
    return {
        Permission(g, res, verb)
        for _, rule in rules_for(objects, account)
        for g in rule["apiGroups"]
        for res in rule["resources"]
        for verb in rule["verbs"]
    }


@cache
def calls(component: str) -> tuple[ApiCall, ...]:
    return tuple(scan(component))


def needed(component: str) -> set[Permission]:
    return {p for c in calls(component) for p in c.permissions()} - GRANTED_TO_EVERYONE


@pytest.mark.parametrize("component", ["agent", "scheduler", "rebalancer"])
def test_every_call_site_is_understood(component: str) -> None:
    found = calls(component)
    unresolved = [f"{c.where}: {c.method}({c.unresolved})" for c in found if c.unresolved]
    assert not unresolved, "cannot tell which kind these calls use; pass a literal or a module constant"
    assert len(found) >= 10  # the scan is finding the code, not an empty tree


@pytest.mark.parametrize(
    ("component", "overlay"), [("agent", "enforce"), ("scheduler", "enforce"), ("scheduler", "observe"),
                               ("rebalancer", "enforce"), ("rebalancer", "observe")]
)
def test_role_covers_every_call(component: str, overlay: str) -> None:
    have = granted(rendered(overlay), SERVICE_ACCOUNTS[component])
    missing = sorted((p, [c.where for c in calls(component) if p in c.permissions()]) for p in needed(component) - have)
    assert not missing, f"{component} code calls APIs its role lacks: {missing}"


@pytest.mark.parametrize(
    ("component", "overlay"), [("agent", "enforce"), ("agent", "observe"), ("scheduler", "enforce"),
                               ("rebalancer", "enforce")]
)
def test_role_grants_nothing_unused(component: str, overlay: str) -> None:
    unused = granted(rendered(overlay), SERVICE_ACCOUNTS[component]) - needed(component)
    assert not unused, f"{component} role grants what no code uses: {sorted(unused)}"


def test_observe_lacks_exactly_the_actuation_calls() -> None:
    observe = granted(rendered("observe"), "loadwise-agent")
    enforce = granted(rendered("enforce"), "loadwise-agent")
    assert ENFORCE_ONLY <= needed("agent")  # the code does make them (gated by dry-run in observe)
    assert not observe & ENFORCE_ONLY
    assert enforce - observe == ENFORCE_ONLY
    assert needed("agent") - ENFORCE_ONLY <= observe


@pytest.mark.parametrize("overlay", ["observe", "enforce"])
def test_no_wildcards_and_separate_accounts(overlay: str) -> None:
    objects = rendered(overlay)
    for o in objects:
        for rule in o.get("rules") or []:
            for key in ("apiGroups", "resources", "verbs", "resourceNames", "nonResourceURLs"):
                assert "*" not in (rule.get(key) or []), f"{o['kind']} {o['metadata']['name']}: wildcard in {key}"
    accounts = {o["metadata"]["name"] for o in objects if o["kind"] == "ServiceAccount"}
    assert accounts == set(SERVICE_ACCOUNTS.values())
    pods = {
        o["metadata"]["name"]: o["spec"]["template"]["spec"]
        for o in objects
        if o["kind"] in ("DaemonSet", "Deployment")
    }
    assert pods["loadwise-agent"]["serviceAccountName"] == "loadwise-agent"
    assert pods["loadwise-scheduler"]["serviceAccountName"] == "loadwise-scheduler"
    assert pods["loadwise-rebalancer"]["serviceAccountName"] == "loadwise-rebalancer"
    # nothing broader than needed: no secrets, no cluster-admin style bindings
    assert all(
        o["roleRef"]["name"].startswith("loadwise-")
        for o in objects
        if o["kind"].endswith("Binding") and "roleRef" in o
    )
    assert not any("secrets" in r["resources"] for o in objects for r in o.get("rules") or [])


@pytest.mark.parametrize(("account", "lease"), [("loadwise-scheduler", LeaseConfig(identity="x").name),
                                               ("loadwise-rebalancer", REBALANCER_LEASE)])
def test_lease_rules_are_scoped_to_the_components_own_lease(account: str, lease: str) -> None:
    defaults = LeaseConfig(identity="x")
    assert defaults.namespace == NAMESPACE
    lease_rules = [
        (ns, r)
        for ns, r in rules_for(rendered("enforce"), account)
        if "coordination.k8s.io" in r["apiGroups"]
    ]
    assert lease_rules and all(ns == NAMESPACE for ns, _ in lease_rules)  # a Role, not a ClusterRole
    for _, rule in lease_rules:
        if rule["verbs"] != ["create"]:  # create cannot be limited by name; everything else is
            assert rule.get("resourceNames") == [lease]


def test_a_call_the_role_lacks_is_caught() -> None:
    # the check can fail: take the eviction right away and the agent's evict() call is reported
    objects = tuple(
        {**o, "rules": [r for r in o["rules"] if "pods/eviction" not in r["resources"]]}
        if o["kind"] == "ClusterRole"
        else o
        for o in rendered("enforce")
    )
    assert Permission("", "pods/eviction", "create") in needed("agent") - granted(objects, "loadwise-agent")


def test_doctor_checks_exactly_what_the_agent_needs() -> None:
    """``loadwise doctor`` reviews its own table of the agent's permissions; it must match the code."""
    table = {
        Permission(a.group, f"{a.resource}/{a.subresource}" if a.subresource else a.resource, a.verb)
        for a in AGENT_API_ACCESS
    }
    assert table == needed("agent")
    assert any(c.method == "request" for c in calls("agent"))  # the doctor's SelfSubjectAccessReviews are seen
