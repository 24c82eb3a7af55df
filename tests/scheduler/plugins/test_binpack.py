"""binpack through whole sessions: fuller nodes win, Volcano's argument keys and weights, weight 0 registers
nothing, extra resources."""

from __future__ import annotations

from tests.scheduler.factories import node, pod, run

from .helpers import conf, scores


def _objs() -> list[dict[str, object]]:
    return [node("a", cpu="4", memory="8Gi"), node("b", cpu="4", memory="8Gi"),
            pod("used", cpu="2", memory="4Gi", node_name="a"), pod("p", cpu="1", memory="1Gi")]


def test_fuller_node_scores_higher() -> None:
    ssn, sink = run(_objs(), conf("binpack"), explain=True)
    # a: ((1 + 2) / 4 + (1 + 4) / 8) / 2 * 100 = 68.75; b: (1/4 + 1/8) / 2 * 100 = 18.75 (truncated)
    assert scores(ssn, "default/p", "binpack") == {"a": 68, "b": 18}
    assert sink.binds["default/p"] == "a"


def test_argument_weights() -> None:
    ssn, _ = run(_objs(), conf(("binpack", {"binpack.weight": 10})), explain=True)
    assert scores(ssn, "default/p", "binpack") == {"a": 687, "b": 187}
    ssn, _ = run(_objs(), conf(("binpack", {"binpack.cpu": 0})), explain=True)
    assert scores(ssn, "default/p", "binpack") == {"a": 62, "b": 12}  # memory only
    ssn, _ = run(_objs(), conf(("binpack", {"binpack.cpu": 3, "binpack.memory": -4})), explain=True)
    # a negative weight falls back to 1: (3 x 0.75 + 0.625) / 4
    assert scores(ssn, "default/p", "binpack") == {"a": 71, "b": 21}
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
    assert scores(ssn, "default/p", "binpack") == {"a": 23, "b": 84}
    assert sink.binds["default/p"] == "b"
