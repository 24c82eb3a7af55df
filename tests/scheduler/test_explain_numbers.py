"""``loadwise explain`` shows the numbers behind every verdict and score, checked here against a hand calculation,
and never prints an empty result silently."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from common.clock import to_rfc3339
from loadwise.cli import main
from scheduler.explain_table import quantity, render_table
from tests.scheduler.factories import T0, node, pod
from tests.scheduler.test_explain_cli import _nodemetric

HOT = "ip-10-0-1-23.eu-west-1.compute.internal"  # an EKS-length node name
THRESHOLDS = {"scheduling.loadwise.io/usage-thresholds": json.dumps({"usageThresholds": {"cpu": 55}})}


def _objects() -> list[dict[str, Any]]:
    return [node(HOT, cpu="16", memory="64Gi", annotations=THRESHOLDS), node("cold", cpu="16", memory="64Gi"),
            _nodemetric(HOT, "4", "8Gi", T0), _nodemetric("cold", "1", "8Gi", T0),
            # bound, but not yet in the NodeMetric's podsMetric: estimated on top of the measured usage
            pod("running", cpu="4", memory="4Gi", node_name=HOT),
            pod("web", cpu="2", memory="2Gi"),
            pod("other", cpu="1", scheduler="default-scheduler")]


def _explain(tmp_path: Path, capsys: pytest.CaptureFixture[str], objects: list[dict[str, Any]],
             *extra: str) -> tuple[int, str, str]:
    snap = tmp_path / "snap.yaml"
    snap.write_text(yaml.safe_dump_all(objects))
    rc = main(["explain", "--snapshot", str(snap), "--now", to_rfc3339(T0 + 30), *extra])
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_loadaware_numbers_match_a_hand_calculation(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = _explain(tmp_path, capsys, _objects(), "-o", "json")
    assert rc == 0
    report = json.loads(out)
    # by hand: the default estimator counts 85 % of a cpu request and 70 % of a memory request
    # running: 4000m -> 3400m;  web: 2000m -> 1700m;  measured 4000m;  (4000 + 3400 + 1700) / 16000 = 56.9 % -> 57 %
    inputs = report["nodes"][HOT]["loadaware"]
    assert inputs["measured"] == {"cpu": 4000, "memory": 8 << 30}
    assert inputs["estimatedPods"] == [{"pod": "default/running", "cpu": 3400, "memory": int(4 * (1 << 30) * 0.7)}]
    assert inputs["thresholdSource"] == "node annotation scheduling.loadwise.io/usage-thresholds"
    web = report["pods"]["default/web"]
    hot = web["numbers"][HOT]["loadaware"]
    assert hot["podEstimate"]["cpu"] == 1700
    assert hot["load"]["cpu"] == 4000 + 3400
    assert hot["usedPercent"]["cpu"] == round((4000 + 3400 + 1700) / 16000 * 100) == 57
    assert hot["thresholds"] == {"cpu": 55}  # the annotation replaces the plugin's thresholds wholesale
    assert web["filter"][HOT] == {"loadaware": "node(s) cpu usage exceed threshold"}
    # cold: (1000 + 1700) / 16000 = 16.9 % -> 17 % against the plugin's 65 %
    cold = web["numbers"]["cold"]["loadaware"]
    assert cold["usedPercent"]["cpu"] == 17 and cold["thresholds"]["cpu"] == 65
    assert cold["thresholdSource"] == "plugin arguments"
    assert web["node"] == "cold"


def test_fit_and_nodeorder_breakdown_add_up(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report = json.loads(_explain(tmp_path, capsys, _objects(), "-o", "json")[1])
    web = report["pods"]["default/web"]
    assert web["numbers"][HOT]["fit"]["cpu"] == {"requested": 4000, "pod": 2000, "allocatable": 16000}
    assert web["numbers"][HOT]["fit"]["pods"] == {"requested": 1, "pod": 1, "allocatable": 110}
    order = web["numbers"]["cold"]["nodeorder"]
    # leastrequested by hand: cpu (16000 - 2000) * 100 // 16000 = 87, memory (64 - 2) * 100 // 64 = 96 -> 91
    assert order["leastrequested"] == {"score": (87 + 96) // 2, "weight": 1}
    assert order["tainttoleration"] == {"score": 100, "weight": 3}
    assert sum(v["score"] * v["weight"] for v in order.values()) == web["scores"]["cold"]["nodeorder"]


def test_pods_of_other_schedulers_are_listed_not_dropped(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report = json.loads(_explain(tmp_path, capsys, _objects(), "-o", "json")[1])
    (other,) = report["notConsidered"]
    assert other["pod"] == "default/other" and other["schedulerName"] == "default-scheduler"
    assert "--all-schedulers" in other["reason"]
    assert "default/other" not in report["pods"]
    everything = json.loads(_explain(tmp_path, capsys, _objects(), "-o", "json", "--all-schedulers")[1])
    assert "default/other" in everything["pods"] and everything["notConsidered"] == []


def test_a_single_pod_that_fits_nowhere_gets_no_gang_wording(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    """Under the default conf (enqueue, gang, overcommit) the pod was never evaluated by allocate; it still gets
    kube's message and a per-node table."""
    rc, out, _ = _explain(tmp_path, capsys, [node("a", cpu="2"), node("b", cpu="2"), pod("big", cpu="8")])
    assert rc == 0
    assert "gang" not in out and "pod group" not in out
    assert "0/2 nodes are available: 2 Insufficient cpu." in out
    assert re.search(r"^  a +noderesources: Insufficient cpu$", out, re.M)


def test_table_fits_the_width_and_never_cuts_a_word(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report = json.loads(_explain(tmp_path, capsys, _objects(), "-o", "json")[1])
    reason = "loadaware: node(s) cpu usage exceed threshold"
    for width in (120, 100, 60):
        text = render_table(report, width=width)
        assert HOT in text  # the long node name whole
        lines = text.splitlines()
        if width >= 100:  # room for every column: nothing wider than the terminal
            assert max(len(line) for line in lines) <= width
        # narrower: the table widens rather than cutting; the reason reads whole, words intact
        (row,) = [i for i, line in enumerate(lines) if line.startswith(f"  {HOT}  ")]
        column = lines[row].index("loadaware")
        cell = [lines[row][column:].split("  ")[0]]
        for line in lines[row + 1:]:
            if line[:column].strip() or not line[column:].strip():
                break
            cell.append(line[column:].split("  ")[0])
        assert " ".join(cell) == reason


def test_reasons_are_listed_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from scheduler.explain import _dedup

    assert _dedup({"n": {"noderesources": "Insufficient cpu; Insufficient cpu"}}) == {
        "n": {"noderesources": "Insufficient cpu"}}


def test_several_snapshots_and_stdin(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    objs = _objects()
    (tmp_path / "nodes.yaml").write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": objs[:4]}))
    (tmp_path / "pods.yaml").write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": objs[4:]}))
    args = ["explain", "--now", to_rfc3339(T0 + 30), "-o", "json"]
    assert main([*args, "--snapshot", str(tmp_path / "nodes.yaml"), "--snapshot", str(tmp_path / "pods.yaml")]) == 0
    assert json.loads(capsys.readouterr().out)["placements"] == {"default/web": "cold"}
    # two `kubectl get -o yaml` outputs run together into one pipe
    both = (tmp_path / "nodes.yaml").read_text() + (tmp_path / "pods.yaml").read_text()
    monkeypatch.setattr("sys.stdin", io.StringIO(both))
    assert main([*args, "--snapshot", "-"]) == 0
    assert json.loads(capsys.readouterr().out)["placements"] == {"default/web": "cold"}


def test_a_nodemetric_from_the_future_is_reported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    objs = _objects()
    objs[3] = _nodemetric("cold", "1", "8Gi", T0 + 3600)
    report = json.loads(_explain(tmp_path, capsys, objs, "-o", "json")[1])
    (warning,) = report["warnings"]
    assert warning.startswith("NodeMetric cold: status.updateTime is 3570s after the session's time")


def test_an_invalid_waterline_policy_in_the_snapshot_is_reported(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    policy = {"apiVersion": "qos.loadwise.io/v1alpha1", "kind": "WaterlinePolicy", "metadata": {"name": "wl"},
              "spec": {"executeExcess": "10", "objectiveEnsurances": []}}
    report = json.loads(_explain(tmp_path, capsys, [*_objects(), policy], "-o", "json")[1])
    assert report["warnings"] == [
        "WaterlinePolicy wl: ignored, invalid: spec.executeExcess: '10' does not match "
        "'^(100(\\\\.0+)?|[0-9]{1,2}(\\\\.[0-9]+)?)%$'"] or report["warnings"][0].startswith(
        "WaterlinePolicy wl: ignored, invalid: spec.")


def test_an_empty_result_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = _explain(tmp_path, capsys, [node("a")])
    assert rc == 0 and out.strip() == "no pending pods in the snapshot"


def test_quantities_read_like_kubernetes() -> None:
    assert quantity("cpu", 1700) == "1700m"
    assert quantity("memory", 3 << 29) == "1.5Gi"
    assert quantity("pods", 3) == "3"


def test_the_readme_quick_look_is_what_the_command_prints(capsys: pytest.CaptureFixture[str],
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    root = Path(__file__).resolve().parents[2]
    readme = (root / "README.md").read_text()
    command = "loadwise explain --snapshot docs/examples/explain-snapshot.yaml --now 2023-11-14T22:13:50Z"
    assert f"`{command}`" in readme.replace("\n", " ")
    block = readme.split(command.split(" --now")[0], 1)[1].split("```\n", 1)[1].split("```", 1)[0]
    monkeypatch.chdir(root)
    monkeypatch.setenv("COLUMNS", "100")
    assert main(command.split()[1:]) == 0
    printed = capsys.readouterr().out.splitlines()
    shown = block.splitlines()
    cut = shown.index("  ...")
    assert shown[:cut] == printed[:cut]
    assert shown[cut + 1:] == printed[len(printed) - len(shown) + cut + 1:]


def test_a_node_that_is_not_ready_is_reported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    objs = _objects()
    objs[1]["status"]["conditions"] = [{"type": "Ready", "status": "Unknown"}]
    report = json.loads(_explain(tmp_path, capsys, objs, "-o", "json")[1])
    assert "Node cold: not considered: its Ready condition is 'Unknown'" in report["warnings"]
    assert "cold" not in report["nodes"]
