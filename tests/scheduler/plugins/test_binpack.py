"""binpack through whole sessions: fuller nodes win, Volcano's argument keys and weights, weight 0 registers
nothing, extra resources."""

from __future__ import annotations

import yaml

from tests.scheduler.factories import T0, node, pod, run

from .helpers import conf, scores


def _objs() -> list[dict[str, object]]:
    return [node("a", cpu="4", memory="8Gi"), node("b", cpu="4", memory="8Gi"),
            pod("used", cpu="2", memory="4Gi", node_name="a"), pod("p", cpu="1", memory="1Gi")]


def test_fuller_node_scores_higher() -> None:
    ssn, sink = run(_objs(), conf("binpack"), explain=True)
    # a: ((1 + 2) / 4 + (1 + 4) / 8) / 2 * 100 = 68.75; b: (1/4 + 1/8) / 2 * 100 = 18.75 (floats, as Volcano's)
    assert scores(ssn, "default/p", "binpack") == {"a": 68.75, "b": 18.75}
    assert sink.binds["default/p"] == "a"


def test_argument_weights() -> None:
    ssn, _ = run(_objs(), conf(("binpack", {"binpack.weight": 10})), explain=True)
    assert scores(ssn, "default/p", "binpack") == {"a": 687.5, "b": 187.5}
    ssn, _ = run(_objs(), conf(("binpack", {"binpack.cpu": 0})), explain=True)
    assert scores(ssn, "default/p", "binpack") == {"a": 62.5, "b": 12.5}  # memory only
    ssn, _ = run(_objs(), conf(("binpack", {"binpack.cpu": 3, "binpack.memory": -4})), explain=True)
    # a negative weight falls back to 1: (3 x 0.75 + 0.625) / 4
    assert scores(ssn, "default/p", "binpack") == {"a": 71.875, "b": 21.875}
    ssn, _ = run(_objs(), conf(("binpack", {"binpack.weight": 0})), explain=True)
    assert "binpack" not in ssn.explain["default/p"].scores["a"]  # type: ignore[index]


def test_extra_resources() -> None:
    a, b = node("a", cpu="4", memory="8Gi"), node("b", cpu="4", memory="8Gi")
    for n in (a, b):
        n["status"]["allocatable"]["example.com/gpu"] = "4"
    user = pod("user", cpu="1", memory="1Gi", node_name="b")
    user["spec"]["containers"][0]["resources"]["requests"]["example.com/gpu"] = "3"
    p = pod("p", cpu="1", memory="1Gi")
    p["spec"]["containers"][0]["resources"]["requests"]["example.com/gpu"] = "1"
    args = {"binpack.resources": "example.com/gpu", "binpack.resources.example.com/gpu": 6}
    ssn, sink = run([a, b, user, p], conf(("binpack", args)), explain=True)
    # a: (0.25 + 0.125 + 6 x 0.25) / 8 * 100 = 23.4; b: (0.5 + 0.25 + 6 x 1.0) / 8 * 100 = 84.4
    assert scores(ssn, "default/p", "binpack") == {"a": 23.4375, "b": 84.375}
    assert sink.binds["default/p"] == "b"


def test_fractional_scores_are_kept_and_decide() -> None:
    """Volcano's node-order functions return float64 and the session sums and compares floats: a node scoring
    50.5 beats one scoring 50.25 every time (truncated, both were 50 and a seed-dependent tie-break decided)."""
    from common.clock import FakeClock
    from scheduler.conf import parse_conf
    from scheduler.explain import explain
    from scheduler.framework.snapshot import Snapshot

    objs = [node("a", cpu="200m"), node("b", cpu="400m"), pod("used", cpu="100m", memory=None, node_name="b"),
            pod("p", cpu="101m", memory=None)]
    binpack = parse_conf(yaml.safe_load(conf(("binpack", {"binpack.memory": 0}))))
    for seed in range(8):
        report = explain(Snapshot.from_objects(objs), binpack, clock=FakeClock(T0), seed=seed)
        # cpu only: a (0 + 101) / 200 = 50.5 %, b (100 + 101) / 400 = 50.25 %
        assert report["pods"]["default/p"]["scores"] == {"a": {"binpack": 50.5}, "b": {"binpack": 50.25}}
        assert report["placements"] == {"default/p": "a"}
