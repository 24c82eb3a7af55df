"""nodeorder (Volcano's weights over the kube scorers) through whole sessions: the raw weighted sum with the
default weights, weight 0 disabling a scorer, mostrequested for packing, image locality and the topology-spread
system defaults."""

from __future__ import annotations

from typing import Any

from scheduler.plugins.nodeorder import ImageLocality, normalized_image_name
from tests.scheduler.factories import node, pod, run, session

from .helpers import conf, scores

MB = 1024 * 1024
ONLY = {k: 0 for k in ("leastrequested.weight", "balancedresource.weight", "nodeaffinity.weight",
                       "podaffinity.weight", "tainttoleration.weight", "imagelocality.weight",
                       "podtopologyspread.weight")}


def _only(**weights: int) -> dict[str, Any]:
    return {**ONLY, **{f"{k}.weight": v for k, v in weights.items()}}


def test_default_weights_sum_the_scorers_raw() -> None:
    objs = [node("a", cpu="4", memory="8Gi"), node("b", cpu="8", memory="8Gi"), pod("p", cpu="1", memory="1Gi")]
    ssn, sink = run(objs, conf("nodeorder"), explain=True)
    # leastrequested  a: (75 + 87) // 2 = 81   b: (87 + 87) // 2 = 87            x1
    # balancedresource (Volcano's B_with) a: int((1 - |0.25 - 0.125| / 2) * 100) = 93   b: 100   x1
    # tainttoleration: no taints anywhere -> 100 each   x3; the other scorers have nothing to say -> 0
    assert scores(ssn, "default/p", "nodeorder") == {"a": 81 + 93 + 300, "b": 87 + 100 + 300}
    assert sink.binds["default/p"] == "b"


def test_weight_zero_disables_and_mostrequested_packs() -> None:
    objs = [node("a", cpu="4", memory="8Gi"), node("b", cpu="8", memory="8Gi"), pod("p", cpu="1", memory="1Gi")]
    ssn, _ = run(objs, conf(("nodeorder", _only(leastrequested=1))), explain=True)
    assert scores(ssn, "default/p", "nodeorder") == {"a": 81, "b": 87}
    ssn, sink = run(objs, conf(("nodeorder", _only(mostrequested=2))), explain=True)
    # a: (25 + 12) // 2 = 18, b: (12 + 12) // 2 = 12; x2
    assert scores(ssn, "default/p", "nodeorder") == {"a": 36, "b": 24}
    assert sink.binds["default/p"] == "a"
    ssn, _ = run(objs, conf(("nodeorder", ONLY)), explain=True)
    assert "nodeorder" not in ssn.explain["default/p"].scores["a"]  # type: ignore[index]


def test_plugin_weight_multiplies_the_weighted_sum() -> None:
    """The plugin's weight multiplies the sum of weighted scorers; no node reporting an image adds nothing."""
    objs = [node("a", cpu="4", memory="8Gi"), node("b", cpu="8", memory="8Gi"), pod("p", cpu="1", memory="1Gi")]
    weights = _only(leastrequested=1, balancedresource=2, imagelocality=1)
    ssn, _ = run(objs, conf(("nodeorder", weights, 3)), explain=True)
    # (leastrequested + 2 x balancedresource) x 3: a (81 + 186) x 3, b (87 + 200) x 3
    assert scores(ssn, "default/p", "nodeorder") == {"a": 801, "b": 861}


def test_image_locality() -> None:
    a = node("a")
    a["status"]["images"] = [{"names": ["nginx:1.25"], "sizeBytes": 500 * MB},
                             {"names": ["docker.io/library/redis:latest", "redis:latest"], "sizeBytes": 100 * MB}]
    spec = {"containers": [{"name": "c", "image": "nginx:1.25", "resources": {"requests": {"cpu": "100m"}}}]}
    objs = [a, node("b"), pod("p", extra_spec=spec)]
    ssn, sink = run(objs, conf(("nodeorder", _only(imagelocality=1))), explain=True)
    # 500 MiB x (1 of 2 nodes) = 250 MiB, clamped to 23 MiB .. 1000 MiB: 100 * 227 // 977 = 23
    assert scores(ssn, "default/p", "nodeorder") == {"a": 23, "b": 0}
    assert sink.binds["default/p"] == "a"
    spec = {"containers": [{"name": "c", "image": "redis", "resources": {"requests": {"cpu": "100m"}}},
                           {"name": "d", "image": "nginx:1.25"}]}
    ssn, _ = run([a, node("b"), pod("q", extra_spec=spec)], conf(("nodeorder", _only(imagelocality=1))),
                 explain=True)
    # (50 + 250) MiB over 2 containers: 100 * 277 // 1977 = 14
    assert scores(ssn, "default/q", "nodeorder") == {"a": 14, "b": 0}
    assert normalized_image_name("redis") == "redis:latest"
    assert normalized_image_name("registry:5000/redis") == "registry:5000/redis:latest"
    assert normalized_image_name("redis@sha256:ab") == "redis@sha256:ab"


def test_image_locality_scores_kept_per_image_list() -> None:
    """Pods with the same images share one score vector; another image list gets its own."""
    a = node("a")
    a["status"]["images"] = [{"names": ["nginx:1.25"], "sizeBytes": 500 * MB}]

    def web(name: str, image: str) -> dict[str, Any]:
        return pod(name, extra_spec={"containers": [{"name": "c", "image": image}]})

    ssn, _ = session([a, node("b"), web("p", "nginx:1.25"), web("q", "nginx:1.25"), web("r", "redis")],
                  conf(("nodeorder", _only(imagelocality=1))))
    locality = ImageLocality.of(ssn)
    assert ImageLocality.of(ssn) is locality   # shared while the node views are the same objects
    p, q, r = (ssn.tasks[f"uid-default-{n}"] for n in "pqr")
    assert locality.score(p) is locality.score(q) and locality.score(p).tolist() == [23, 0]
    assert locality.score(r).tolist() == [0, 0] and not locality.score(p).flags.writeable


def test_topology_spread_uses_the_system_defaults() -> None:
    objs = [node("a"), node("b"), pod("web-0", node_name="a", labels={"app": "web"}), pod("web-1",
                                                                                          labels={"app": "web"})]
    ssn, sink = run(objs, conf(("nodeorder", _only(podtopologyspread=2))), explain=True)
    assert scores(ssn, "default/web-1", "nodeorder") == {"a": 132, "b": 200}
    assert sink.binds["default/web-1"] == "b"


def test_affinity_and_taint_scorers_inside_nodeorder() -> None:
    pref = {"affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 5, "preference": {"matchExpressions": [{"key": "disk", "operator": "In", "values": ["ssd"]}]}}]}}}
    objs = [node("a", labels={"disk": "ssd"}, taints=[{"key": "k", "value": "v", "effect": "PreferNoSchedule"}]),
            node("b"), pod("p", extra_spec=pref)]
    ssn, _ = run(objs, conf(("nodeorder", _only(nodeaffinity=2, tainttoleration=3))), explain=True)
    assert scores(ssn, "default/p", "nodeorder") == {"a": 200 + 0, "b": 0 + 300}
