"""Starvation relief: a pod pending at least relaxAfterSeconds is no longer filtered on usage, only scored."""

from __future__ import annotations

import pytest

from common.clock import FakeClock
from common.config import ConfigError
from scheduler.framework.plugin import actions
from scheduler.framework.session import Session
from scheduler.framework.snapshot import Snapshot
from scheduler.loadaware.args import parse_loadaware_args
from tests.scheduler.factories import RecordingSink, node, pod
from tests.scheduler.factories import conf as parse

from .helpers import NOW, conf, metric


def place(waited: float, relax_after: int | None) -> dict[str, str]:
    """One 1-core pod, created ``waited`` seconds ago, on two 8-core nodes at 70% and 80% CPU (threshold 65%)."""
    args = {"usageThresholds": {"cpu": 65, "memory": 95}}
    if relax_after is not None:
        args["relaxAfterSeconds"] = relax_after
    objs = [node("warm", cpu="8"), node("hot", cpu="8"), metric("warm", 5600, 1), metric("hot", 6400, 1),
            pod("p", cpu="1", memory="1Gi", created=NOW - waited)]
    sink = RecordingSink()
    ssn = Session(Snapshot.from_objects(objs), parse(conf(("loadaware", args), "noderesources")),
                  clock=FakeClock(NOW), sink=sink)
    for name in ssn.conf.actions:
        actions()[name]().execute(ssn)
    return sink.binds


def test_a_pod_waits_while_every_node_is_above_the_threshold() -> None:
    assert place(waited=3600, relax_after=None) == {}  # off by default: Koordinator's behaviour
    assert place(waited=599, relax_after=600) == {}


def test_past_the_bound_the_pod_goes_to_the_coolest_node_that_fits() -> None:
    assert place(waited=600, relax_after=600) == {"default/p": "warm"}


def test_the_bound_is_validated() -> None:
    assert parse_loadaware_args({}).relax_after_seconds == 0
    assert parse_loadaware_args({"relaxAfterSeconds": 900}).relax_after_seconds == 900
    with pytest.raises(ConfigError, match="relaxAfterSeconds"):
        parse_loadaware_args({"relaxAfterSeconds": -1})
