"""podtopologyspread's filter (verdicts and reasons) and score against a walk over every placed pod, for random
nodes (some without a topology key), node selectors, constraints (minDomains, nodeAffinityPolicy, the system
defaults) and scored-node masks, after every placement, removal and start of termination."""

from __future__ import annotations

import math
import random
from collections import Counter
from typing import Any

import numpy as np
import pytest

from common.clock import FakeClock
from common.objects import NodeView, PodView
from scheduler.framework.memo import SessionMemo
from scheduler.framework.session import Session
from scheduler.framework.snapshot import Snapshot
from scheduler.framework.status import Code
from scheduler.plugins.podtopologyspread import HOSTNAME, SYSTEM_DEFAULT_CONSTRAINTS, Constraint, PodIndex, SpreadCheck
from scheduler.predicates.spread import MISSING_LABEL_REASON, SKEW_REASON
from tests.scheduler.factories import T0, RecordingSink, node, pod, session
from tests.scheduler.factories import conf as parse

from .helpers import conf, random_placement_step

ZONE = "topology.kubernetes.io/zone"
APPS = ["web", "db"]


def _random_constraint(rng: random.Random) -> dict[str, Any]:
    c: dict[str, Any] = {"maxSkew": rng.randint(1, 3), "topologyKey": rng.choice([ZONE, "rack", HOSTNAME]),
                         "whenUnsatisfiable": rng.choice(["DoNotSchedule", "ScheduleAnyway"]),
                         "labelSelector": {"matchLabels": {"app": rng.choice(APPS)}}}
    if rng.random() < 0.3:
        c["minDomains"] = rng.randint(1, 4)
    if rng.random() < 0.3:
        c["nodeAffinityPolicy"] = "Ignore"
    return c


def _objects(rng: random.Random) -> list[dict[str, Any]]:
    names = [f"n{i}" for i in range(8)]
    objs: list[dict[str, Any]] = []
    for name in names:
        labels = {k: rng.choice(v) for k, v in ((ZONE, "xyz"), ("rack", "pq")) if rng.random() < 0.8}
        labels["disk"] = rng.choice(["ssd", "hdd"])
        objs.append(node(name, cpu="64", labels=labels))
    for j in range(50):
        spec: dict[str, Any] = {}
        if rng.random() < 0.3:
            spec["nodeSelector"] = {"disk": "ssd"}
        if rng.random() < 0.5:
            keyed: dict[str, dict[str, Any]] = {}
            for c in (_random_constraint(rng) for _ in range(rng.randint(1, 2))):
                keyed.setdefault(f"{c['topologyKey']}/{c['whenUnsatisfiable']}", c)
            spec["topologySpreadConstraints"] = list(keyed.values())
        objs.append(pod(f"p{j}", cpu="10m", namespace=rng.choice(["a", "a", "a", "b"]),
                        labels={"app": rng.choice(APPS)} if rng.random() < 0.9 else {},
                        node_name=rng.choice(names) if rng.random() < 0.6 else "", extra_spec=spec))
    return objs


class _Walk:
    """The filter and score computed node by node from every pod the index places."""

    def __init__(self, ssn: Session) -> None:
        self.ssn = ssn
        self.labels = [nd.view.labels for nd in ssn.nodes]
        self.live = [(p.pod, p.node) for p in PodIndex.of(ssn)._placed.values() if not p.terminating]

    def _eligible(self, pod: PodView, c: Constraint, j: int, keys: list[str]) -> bool:
        lb = self.labels[j]
        return all(k in lb for k in keys) and (
            not c.honor_affinity or all(lb.get(k) == v for k, v in pod.node_selector.items()))

    def _domain_counts(self, pod: PodView, c: Constraint, keys: list[str]) -> Counter[str]:
        key, out = c.spec.topology_key, Counter[str]()
        for p, k in self.live:
            if p.namespace == pod.namespace and c.spec.selector.matches(p.labels) and \
                    self._eligible(pod, c, k, keys):
                out[self.labels[k][key]] += 1
        return out

    def filter(self, pod: PodView, cons: list[Constraint]) -> list[str]:
        hard = [c for c in cons if c.spec.hard]
        keys = [c.spec.topology_key for c in hard]
        out = [""] * len(self.labels)
        for c in hard:
            key = c.spec.topology_key
            counts = self._domain_counts(pod, c, keys)
            seen = {self.labels[j][key] for j in range(len(self.labels)) if self._eligible(pod, c, j, keys)}
            low = min(counts[v] for v in seen) if seen and len(seen) >= c.spec.min_domains else 0
            mine = 1 if c.spec.selector.matches(pod.labels) else 0
            for j, lb in enumerate(self.labels):
                if out[j]:
                    continue
                if key not in lb:
                    out[j] = MISSING_LABEL_REASON
                elif counts[lb[key]] + mine - low > c.spec.max_skew:
                    out[j] = SKEW_REASON
        return out

    def score(self, pod: PodView, cons: list[Constraint], system: bool, mask: list[bool]) -> list[int]:
        soft = [c for c in cons if not c.spec.hard]
        n = len(self.labels)
        if not soft:
            return [0] * n
        keys = [c.spec.topology_key for c in soft]
        has_all = [all(k in lb for k in keys) for lb in self.labels]
        scored = [mask[j] and (system or has_all[j]) for j in range(n)]
        raw = [0.0] * n
        for c in soft:
            key = c.spec.topology_key
            if not any(key in lb for lb in self.labels):
                continue
            if key == HOSTNAME:
                size = sum(scored)
            else:
                size = len({lb[key] for j, lb in enumerate(self.labels) if scored[j] and key in lb})
            counts = self._domain_counts(pod, c, [key] if system else keys)
            for j, lb in enumerate(self.labels):
                if key in lb:
                    raw[j] += counts[lb[key]] * math.log(size + 2) + (c.spec.max_skew - 1)
        rounded = [math.floor(r + 0.5) for r in raw]
        if not any(scored):
            return [0] * n
        hi = max(s for s, on in zip(rounded, scored, strict=True) if on)
        lo = min(s for s, on in zip(rounded, scored, strict=True) if on)
        return [0 if not scored[j] else 100 if hi == 0 else 100 * (hi + lo - rounded[j]) // hi for j in range(n)]


@pytest.mark.parametrize("seed", range(12))
def test_filter_and_score_equal_a_walk_over_the_placed_pods(seed: int) -> None:
    rng = random.Random(seed)
    ssn = session(_objects(rng), conf("podtopologyspread"))[0]
    check = SpreadCheck(ssn, SYSTEM_DEFAULT_CONSTRAINTS, True)
    tasks = list(ssn.tasks.values())
    incoming = [t for t in tasks if not t.node_name]
    n = len(ssn.nodes)
    for step in range(40):
        if step:
            random_placement_step(rng, ssn, tasks)
        walk = _Walk(ssn)
        for task in rng.sample(incoming, 4):
            cons, system = check.constraints(task)
            res = check.filter(task)
            got = ["" if res.passed[j] else res.found(j)[0][1] for j in range(n)]
            assert got == walk.filter(task.pod, cons), (step, task.key)
            assert all(res.found(j)[0][0] is (Code.UNRESOLVABLE if got[j] == MISSING_LABEL_REASON
                                               else Code.UNSCHEDULABLE) for j in range(n) if got[j])
            mask = [rng.random() < 0.8 for _ in range(n)]
            ssn.score_mask = np.array(mask, dtype=np.bool_)
            assert check.score(task).tolist() == walk.score(task.pod, cons, system, mask), (step, task.key)
            ssn.score_mask = None


def test_domain_ids_kept_between_sessions_follow_the_nodes() -> None:
    """Domain ids kept from one session to the next are those of the session's own nodes as nodes come, go and
    change labels."""
    rng = random.Random(5)
    memo = SessionMemo()
    parsed = parse(conf("podtopologyspread"))
    nodes: dict[str, NodeView] = {}
    for k in range(20):
        for _ in range(rng.randrange(0, 4)):
            name = f"n{rng.randrange(8)}"
            if name in nodes and rng.random() < 0.3:
                del nodes[name]
            else:
                labels = {ZONE: rng.choice("xyz")} if rng.random() < 0.8 else {}
                nodes[name] = NodeView.parse(node(name, labels=labels))
        snap = Snapshot.build(list(nodes.values()), [])
        ssn = Session(snap, parsed, clock=FakeClock(T0 + 60), sink=RecordingSink(), memo=memo, renew=True)
        check = SpreadCheck(ssn, SYSTEM_DEFAULT_CONSTRAINTS, True)
        for key in (ZONE, HOSTNAME):
            ids, ndom = check.domains(key)
            values: dict[str, int] = {}
            want = [values.setdefault(nd.view.labels[key], len(values)) if key in nd.view.labels else -1
                    for nd in ssn.nodes]
            assert (ids.tolist(), ndom) == (want, len(values)), (k, key)
        ssn.close()
        memo.release(ssn)
        memo.rotate()


@pytest.mark.parametrize("seed", range(6))
def test_constraints_kept_per_signature_equal_each_pods_own_parse(seed: int) -> None:
    """Pods sharing spread constraints and labels share one parse; each pod's equals its own parse."""
    rng = random.Random(seed)
    objs = _objects(rng)
    for p in objs:
        if p["kind"] == "Pod" and rng.random() < 0.3:  # matchLabelKeys: the pod's own value joins the selector
            p["metadata"]["labels"]["rev"] = rng.choice("12")
            p["spec"]["topologySpreadConstraints"] = [{**_random_constraint(rng), "matchLabelKeys": ["rev"]}]
    ssn = session(objs, conf("podtopologyspread"))[0]
    check = SpreadCheck(ssn, SYSTEM_DEFAULT_CONSTRAINTS, True)
    fresh = SpreadCheck(ssn, SYSTEM_DEFAULT_CONSTRAINTS, True)
    for task in ssn.tasks.values():
        assert check.constraints(task) == fresh._parse_pod(task.pod), task.key
