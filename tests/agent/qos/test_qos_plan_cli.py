"""``loadwise qos-plan``: JSON decisions per tick of a state file; an invalid policy exits 2 naming the field."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from loadwise.cli import main

POLICY = {
    "apiVersion": "qos.loadwise.io/v1alpha1",
    "kind": "WaterlinePolicy",
    "metadata": {"name": "colocation"},
    "spec": {
        "nodeSelector": {"matchLabels": {"pool": "colocation"}},
        "objectiveEnsurances": [
            {"name": "cpu-throttle", "metricRule": {"name": "cpu_total_usage", "value": "5000"},
             "avoidanceThreshold": 2, "restoreThreshold": 1,
             "action": {"name": "throttle", "coolDownSeconds": 20,
                        "throttle": {"cpuThrottle": {"minCPURatio": 10, "stepCPURatio": 20}}}},
            {"name": "cpu-evict", "metricRule": {"name": "cpu_total_usage", "value": "7000"},
             "action": {"name": "eviction", "eviction": {"terminationGracePeriodSeconds": 15}}},
        ],
        "podQOS": [{"name": "be", "scopeSelector": {"matchExpressions": [
            {"scopeName": "QOSClass", "operator": "In", "values": ["BestEffort"]}]},
            "allowedActions": ["throttle", "eviction"]}],
    },
}


def _pod(name: str, cpu: str, quota: int = -1, **kw: Any) -> dict[str, Any]:
    return {"namespace": "batch", "name": name, "uid": name, "qosClass": "BestEffort", "priority": 0,
            "startTime": "2024-01-01T00:00:00Z", "usage": {"cpu": cpu, "memory": "1Gi"},
            "containers": [{"name": "main", "usage": {"cpu": cpu}, "cpuQuota": quota, "cpuPeriod": 100000}], **kw}


STATE = {
    "now": "2024-03-01T12:00:00Z",
    "node": {"name": "n1", "labels": {"pool": "colocation"}, "metrics": {"cpu_core_numbers": 8}},
    "pods": [_pod("small", "500m"), _pod("big", "2"), {"namespace": "prod", "name": "web", "qosClass": "Guaranteed",
                                                       "usage": {"cpu": "3"}}],
    "ticks": [
        {"node": {"metrics": {"cpu_total_usage": 6000}}},
        {"node": {"metrics": {"cpu_total_usage": 7500}}},
        {"node": {"metrics": {"cpu_total_usage": 4000}}, "pods": [_pod("small", "500m")]},
        {"at": "2024-03-01T12:01:00Z"},
    ],
}


def _run(tmp_path: Path, capsys: pytest.CaptureFixture[str], policy: Any, state: Any, *extra: str) -> tuple[int, Any]:
    (tmp_path / "p.yaml").write_text(yaml.safe_dump(policy))
    (tmp_path / "s.json").write_text(json.dumps(state))
    rc = main(["qos-plan", "--policy", str(tmp_path / "p.yaml"), "--state", str(tmp_path / "s.json"), *extra])
    out = capsys.readouterr().out
    return rc, json.loads(out) if "-o" in extra else out


def _quota(action: dict[str, Any]) -> int:
    """The quota of a one-container pod's throttle action."""
    (container,) = action["containers"]
    return int(container["cpuQuota"])


def test_multi_tick_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out = _run(tmp_path, capsys, POLICY, STATE, "-o", "json")
    assert rc == 0 and isinstance(out, list) and len(out) == 4
    t0, t1, t2, t3 = out
    assert t0["triggered"] == [] and t0["scheduling"] == "enabled" and t0["actions"] == []
    # tick 1: both rules fire; evict gap (1.1)(7500-7000)=550 -> big (2000m) closes it; throttle gap to the
    # settling target (1.1)(7500-0.95*5000)=3025, big was just evicted so small alone is stepped: 500m*0.8 = 400m
    assert t1["triggered"] == ["colocation.cpu-throttle", "colocation.cpu-evict"]
    assert t1["order"] == ["batch/big", "batch/small"]
    assert t1["actions"][0] == {"pod": "batch/big", "action": "evict", "gracePeriodSeconds": 15,
                                "released": {"cpu_total_usage": 2000}, "rules": ["colocation.cpu-evict"]}
    throttle = t1["actions"][1]
    assert {k: throttle[k] for k in ("pod", "action", "direction", "containers", "released")} \
        == {"pod": "batch/small", "action": "throttle", "direction": "down",
            "containers": [{"name": "main", "previousCpuQuota": -1, "cpuQuota": 40000, "cpuPeriod": 100000,
                            "gapShare": 3025, "released": 100}],
            "released": {"cpu_total_usage": 100}}
    assert t1["scheduling"] == "disabled"
    # tick 2: under both waterlines -> restored; the throttled container steps back up by 20%
    assert t2["restored"] == ["colocation.cpu-throttle", "colocation.cpu-evict"]
    assert [(a["direction"], _quota(a)) for a in t2["actions"]] == [("up", 48000)]
    assert t2["scheduling"] == "disabled"  # cool-down 300 s of the evict action (max over the rules)
    # tick 3: calm tick keeps walking the quota back until the original (unlimited) is reached
    assert [(a["direction"], _quota(a)) for a in t3["actions"]] == [("up", 57600)]


def test_single_state_is_one_object(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    state = {k: v for k, v in STATE.items() if k != "ticks"}
    state["node"] = {**state["node"], "metrics": {"cpu_total_usage": 9000, "cpu_core_numbers": 8}}
    rc, out = _run(tmp_path, capsys, POLICY, state, "-o", "json")
    assert rc == 0 and isinstance(out, dict)
    assert out["triggered"] == ["colocation.cpu-evict"] and [a["pod"] for a in out["actions"]] == ["batch/big"]
    assert out["skipped"] == [{"pod": "batch/small", "action": "evict",
                               "reason": "per-node eviction rate limit reached"}]
    rc, out = _run(tmp_path, capsys, POLICY, state, "-o", "json", "--max-evictions", "5")
    assert [a["pod"] for a in out["actions"]] == ["batch/big", "batch/small"]


def test_invalid_policy_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = json.loads(json.dumps(POLICY))
    bad["spec"]["objectiveEnsurances"][1]["action"]["coolDownSeconds"] = 0
    rc, out = _run(tmp_path, capsys, bad, STATE, "-o", "json")
    assert rc == 2
    assert out["valid"] is False
    assert out["invalidField"] == "spec.objectiveEnsurances[1].action.coolDownSeconds"
    assert "0" in out["error"]


def test_invalid_state_and_text_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = json.loads(json.dumps(STATE))
    bad["pods"][0]["usage"]["cpu"] = "lots"
    (tmp_path / "p.yaml").write_text(yaml.safe_dump(POLICY))
    (tmp_path / "s.json").write_text(json.dumps(bad))
    assert main(["qos-plan", "--policy", str(tmp_path / "p.yaml"), "--state", str(tmp_path / "s.json")]) == 2
    assert "pods[0].usage.cpu" in capsys.readouterr().err
    rc, text = _run(tmp_path, capsys, POLICY, STATE)
    assert rc == 0 and "evict batch/big grace=15s" in text and "throttle down batch/small quota main -1 -> 40000/100000us" in text


def test_pressure_in_the_state_drives_a_pressure_rule(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    policy = json.loads(json.dumps(POLICY))
    policy["spec"]["objectiveEnsurances"] = [
        {"name": "stall", "metricRule": {"name": "cpu_pressure_some", "value": "20"}, "restoreThreshold": 1,
         "action": {"name": "throttle", "throttle": {"cpuThrottle": {"stepCPURatio": 20}}}}]
    state = {**STATE, "ticks": [{"node": {"metrics": {"cpu_pressure_some": 35.5}}},
                                {"node": {"metrics": {"cpu_pressure_some": 4.0}}}]}
    rc, out = _run(tmp_path, capsys, policy, state, "-o", "json")
    assert rc == 0
    stalled, calm = out
    assert stalled["triggered"] == ["colocation.stall"]
    # Stall has no per-pod gap: every candidate is stepped down once (20 %), and back up once it restores.
    assert sorted((a["pod"], a["direction"], _quota(a)) for a in stalled["actions"]) == [
        ("batch/big", "down", 160_000), ("batch/small", "down", 40_000)]
    assert calm["restored"] == ["colocation.stall"]
    assert sorted((a["pod"], a["direction"]) for a in calm["actions"]) == [("batch/big", "up"), ("batch/small", "up")]


def test_a_two_container_pod_is_one_action_line_and_one_json_object(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    policy = json.loads(json.dumps(POLICY))
    policy["spec"]["objectiveEnsurances"] = [{**policy["spec"]["objectiveEnsurances"][0], "avoidanceThreshold": 1}]
    duo = _pod("duo", "2")
    duo["containers"] = [{"name": "main", "usage": {"cpu": "1500m"}, "cpuQuota": -1, "cpuPeriod": 100000},
                         {"name": "side", "usage": {"cpu": "500m"}, "cpuQuota": -1, "cpuPeriod": 100000}]
    state = {"now": STATE["now"], "node": {"name": "n1", "labels": {"pool": "colocation"},
                                           "metrics": {"cpu_core_numbers": 8, "cpu_total_usage": 5500}},
             "pods": [duo]}
    # Gap (1.1)(5500 - 0.95 x 5000) = 825, split 1500:500 = 618.75, 206.25; the 20 % steps (300, 100) are smaller.
    rc, out = _run(tmp_path, capsys, policy, state, "-o", "json")
    assert rc == 0 and out["actions"] == [{
        "pod": "batch/duo", "action": "throttle", "direction": "down",
        "containers": [
            {"name": "main", "previousCpuQuota": -1, "cpuQuota": 120000, "cpuPeriod": 100000, "gapShare": 618.75,
             "released": 300},
            {"name": "side", "previousCpuQuota": -1, "cpuQuota": 40000, "cpuPeriod": 100000, "gapShare": 206.25,
             "released": 100}],
        "released": {"cpu_total_usage": 400}, "rules": ["colocation.cpu-throttle"]}]
    rc, text = _run(tmp_path, capsys, policy, state)
    throttles = [line.strip() for line in text.splitlines() if line.strip().startswith("throttle ")]
    assert throttles == ["throttle down batch/duo quota main -1 -> 120000/100000us (gap share 618.75m), "
                         "side -1 -> 40000/100000us (gap share 206.25m) released[cpu_total_usage=400]"]
