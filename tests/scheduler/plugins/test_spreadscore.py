"""The spread score kept per pod signature (``spreadscore.KeptSoftScore``) against the score computed over every
node, for random nodes (some without a zone, rack or hostname label, taints), pods (the system defaults, their own
ScheduleAnyway constraints, node selectors, nodeAffinityPolicy Ignore, nodeTaintsPolicy Honor) and scored-node masks,
after every placement, removal and start of termination — counts growing past what a kept score was made for
included."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest

from scheduler.plugins.podtopologyspread import HOSTNAME, SYSTEM_DEFAULT_CONSTRAINTS, SpreadCheck
from scheduler.plugins.spreadscore import KeptSoftScore
from tests.scheduler.factories import node, pod, session

from .helpers import conf, random_placement_step

ZONE = "topology.kubernetes.io/zone"
APPS = ["web", "db"]


def _soft(rng: random.Random) -> list[dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for _ in range(rng.randint(1, 3)):
        c: dict[str, Any] = {"maxSkew": rng.randint(1, 5), "topologyKey": rng.choice([ZONE, "rack", HOSTNAME]),
                             "whenUnsatisfiable": "ScheduleAnyway",
                             "labelSelector": {"matchLabels": {"app": rng.choice(APPS)}}}
        if rng.random() < 0.3:
            c["nodeAffinityPolicy"] = "Ignore"
        if rng.random() < 0.3:
            c["nodeTaintsPolicy"] = "Honor"
        out.setdefault(c["topologyKey"], c)
    return list(out.values())


def _objects(rng: random.Random, hostnames: bool) -> list[dict[str, Any]]:
    names = [f"n{i}" for i in range(rng.randint(3, 10))]
    objs: list[dict[str, Any]] = []
    for name in names:
        labels = {k: rng.choice(v) for k, v in ((ZONE, "xyz"), ("rack", "pqr")) if rng.random() < 0.85}
        labels["disk"] = rng.choice(["ssd", "hdd"])
        taints = [{"key": "t", "value": "v", "effect": "NoSchedule"}] if rng.random() < 0.2 else []
        objs.append(node(name, cpu="64", labels=labels, taints=taints))
        if not hostnames and rng.random() < 0.3:
            del objs[-1]["metadata"]["labels"][HOSTNAME]
    for j in range(60):
        spec: dict[str, Any] = {}
        if rng.random() < 0.3:
            spec["nodeSelector"] = {"disk": "ssd"}
        if rng.random() < 0.2:
            spec["tolerations"] = [{"key": "t", "operator": "Exists"}]
        if rng.random() < 0.4:
            spec["topologySpreadConstraints"] = _soft(rng)
        objs.append(pod(f"p{j}", cpu="10m", namespace=rng.choice(["a", "a", "a", "b"]),
                        labels={"app": rng.choice(APPS)} if rng.random() < 0.9 else {},
                        node_name=rng.choice(names) if rng.random() < 0.5 else "", extra_spec=spec))
    return objs


@pytest.mark.parametrize("seed", range(16))
def test_kept_score_equals_the_score_over_every_node(seed: int) -> None:
    rng = random.Random(seed)
    ssn = session(_objects(rng, hostnames=seed % 4 != 0), conf("podtopologyspread"))[0]
    check = SpreadCheck(ssn, SYSTEM_DEFAULT_CONSTRAINTS, True)
    tasks = list(ssn.tasks.values())
    incoming = [t for t in tasks if not t.node_name]
    n = len(ssn.nodes)
    for step in range(80):
        for _ in range(rng.randint(1, 3)):
            random_placement_step(rng, ssn, tasks)
        for task in rng.sample(incoming, 3):
            cons, system = check.constraints(task)
            soft = [c for c in cons if not c.spec.hard]
            mask = np.ones(n, dtype=np.bool_) if rng.random() < 0.5 else \
                np.array([rng.random() < 0.8 for _ in range(n)], dtype=np.bool_)
            ssn.score_mask = mask
            got = check.score(task).tolist()
            ssn.score_mask = None
            if not soft:
                assert got == [0] * n
                continue
            has_all = None if system else check._has_all(soft)
            scored = mask if has_all is None else mask & has_all
            every = int(np.count_nonzero(scored))
            weights = [check._weight(c.spec.topology_key, scored, every) for c in soft]
            want = check.direct_score(task.pod, soft, scored, has_all, weights).tolist()
            assert got == want, (step, task.key)
    # the kept form answered (not only the per-node fallback)
    assert any(isinstance(k, KeptSoftScore) for _, k in check._kept_scores.values())
