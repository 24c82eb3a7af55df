"""overcommit admission throttle, sla ordering/votes, and argument validation at conf parse time."""

from __future__ import annotations

from typing import Any

import pytest

from common.config import ConfigError
from scheduler.framework.api import TaskStatus
from scheduler.framework.session import ABSTAIN, PERMIT, REJECT
from tests.scheduler.factories import T0, conf, node, pod, podgroup, run, session

OVER = """
actions: "enqueue"
tiers:
- plugins:
  - name: overcommit
    arguments: {overcommit-factor: 1.5}
"""


def _pending(name: str, cpu: str, created: float = T0, **pg: Any) -> list[dict[str, Any]]:
    return [podgroup(name, 1, phase="Pending", min_resources={"cpu": cpu}, created=created, **pg),
            pod(f"{name}-0", cpu=cpu, group=name)]


def test_overcommit_admits_up_to_factor_times_total_minus_used() -> None:
    # total 4 cpu × 1.5 = 6; 1 used by a running pod → 5 admissible
    objs = [node("a", cpu="4"), pod("busy", cpu="1", node_name="a"), *_pending("j1", "3", created=T0),
            *_pending("j2", "2", created=T0 + 1), *_pending("j3", "1", created=T0 + 2)]
    ssn, _ = run(objs, OVER)
    phases = {j: ssn.jobs[f"default/{j}"].phase for j in ("j1", "j2", "j3")}
    assert phases == {"j1": "Inqueue", "j2": "Inqueue", "j3": "Pending"}
    assert ssn.jobs["default/j3"].job_fit_error == "resource in cluster is overused: overused cpu"
    assert ssn.plugins["overcommit"].inqueue["cpu"] == 5000   # type: ignore[attr-defined]


def test_overcommit_counts_already_admitted_groups() -> None:
    objs = [node("a", cpu="4"), podgroup("old", 1, phase="Inqueue", min_resources={"cpu": "5"}),
            pod("old-0", cpu="5", group="old"), *_pending("new", "2")]
    ssn, _ = run(objs, OVER)
    assert ssn.jobs["default/new"].phase == "Pending"
    assert ssn.fns["job_enqueueable"]["overcommit"](ssn.jobs["default/new"]) == REJECT


SLA = """
actions: "enqueue"
tiers:
- plugins:
  - name: sla
    arguments: {sla-waiting-time: 1m}
- plugins:
  - name: overcommit
    arguments: {overcommit-factor: 1.0}
"""


def test_sla_orders_by_deadline_and_forces_admission_after_waiting() -> None:
    late = podgroup("late", 1, phase="Pending", min_resources={"cpu": "8"}, created=T0 - 600)
    fresh = podgroup("fresh", 1, phase="Pending", min_resources={"cpu": "8"}, created=T0)
    short = podgroup("short", 1, phase="Pending", min_resources={"cpu": "8"}, created=T0)
    short["metadata"]["annotations"] = {"volcano.sh/sla-waiting-time": "10s"}
    objs = [node("a", cpu="4"), late, fresh, short] + [pod(f"{n}-0", cpu="8", group=n) for n in ("late", "fresh",
                                                                                                  "short")]
    ssn, _ = session(objs, SLA, now=T0 + 30)
    j = ssn.jobs
    vote = ssn.fns["job_enqueueable"]["sla"]
    assert (vote(j["default/late"]), vote(j["default/fresh"]), vote(j["default/short"])) == (PERMIT, ABSTAIN, PERMIT)
    assert ssn.fns["job_pipelined"]["sla"](j["default/fresh"]) == ABSTAIN
    # deadlines: late T0-540, short T0+10, fresh T0+60
    order = ssn.fns["job_order"]["sla"]
    assert order(j["default/late"], j["default/short"]) == -1 and order(j["default/short"], j["default/fresh"]) == -1
    ssn, _ = run(objs, SLA, now=T0 + 30)
    # overcommit rejects all three (8 > 4), but sla's permit in the first tier admits those past their deadline
    assert {n: ssn.jobs[f"default/{n}"].phase for n in ("late", "fresh", "short")} == {
        "late": "Inqueue", "fresh": "Pending", "short": "Inqueue"}


@pytest.mark.parametrize(("plugin", "arguments", "key"), [
    ("sla", "{sla-waiting-time: soon}", "sla-waiting-time"),
    ("sla", "{sla-waiting-time: -5s}", "sla-waiting-time"),
])
def test_bad_arguments_are_rejected_naming_the_key(plugin: str, arguments: str, key: str) -> None:
    text = f"""
actions: "enqueue"
tiers:
- plugins:
  - name: {plugin}
    arguments: {arguments}
"""
    with pytest.raises(ConfigError) as err:
        conf(text)
    assert key in str(err.value) and "tiers[0].plugins[0].arguments" in str(err.value)


def test_lenient_arguments_keep_defaults() -> None:
    c = conf("""
actions: "enqueue"
tiers:
- plugins:
  - name: overcommit
    arguments: {overcommit-factor: 0.5}
  - name: capacity
    arguments: {ancestorReclaimLevel: "two"}
  - name: nodegroup
    arguments: {strict: maybe}
""")
    assert c.plugin("overcommit") is not None
    from scheduler.framework.plugin import Arguments, plugin_builders

    b = plugin_builders()
    assert b["overcommit"](Arguments({"overcommit-factor": 0.5})).factor == 1.2   # type: ignore[attr-defined]
    assert b["capacity"](Arguments({"ancestorReclaimLevel": "two"})).args.ancestor_reclaim_level == 0  # type: ignore[attr-defined]
    assert b["nodegroup"](Arguments({"strict": "maybe"})).args.strict is True  # type: ignore[attr-defined]


def test_sla_permit_keeps_partial_reservations_of_a_late_gang() -> None:
    text = """
actions: "enqueue, allocate"
tiers:
- plugins:
  - name: sla
    arguments: {sla-waiting-time: 1m}
- plugins:
  - name: gang
"""
    objs = [node("a", cpu="2"), podgroup("g", 3, created=T0)] + [pod(f"g-{i}", cpu="1", group="g") for i in range(3)]
    ssn, sink = run(objs, text, now=T0 + 30)          # before the deadline: gang discards the partial gang
    assert sink.binds == {} and not ssn.jobs["default/g"].tasks_in(TaskStatus.ALLOCATED)
    ssn, sink = run(objs, text, now=T0 + 120)         # past it: two tasks stay reserved (not bound) for the gang
    assert sink.binds == {} and len(ssn.jobs["default/g"].tasks_in(TaskStatus.ALLOCATED)) == 2
