"""``loadwise sim`` end to end: JSON, the HTML report, several seeds, clear errors, and load-aware beating kube-default."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from common.config import ConfigError
from loadwise.cli import main
from sim.compare import longest_first, parse_seeds, run_seeds
from sim.measures import measure
from sim.policies import BUILTIN, DEFAULT_COMPARE, load_policies, parse_assignments
from sim.run import SimOptions, Simulation, run
from sim.synthetic import SyntheticConfig, generate
from sim.traces import OPENB_NODES_FILE, OPENB_PODS_FILE

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.mark.slow
def test_json_output_and_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    rc = main(["sim", "--nodes", "4", "--hours", "0.25", "-o", "json", "--no-progress", "--jobs", "1", "--out", str(out)])
    assert rc == 0
    doc = json.loads(capsys.readouterr().out)
    assert list(doc["policies"]) == ["kube-default", "loadaware", "loadaware-waterline"]
    assert doc["policies"]["loadaware-waterline"]["waterline"].endswith("waterline.yaml")
    m = doc["policies"]["kube-default"]["measures"]
    assert m["pods_submitted"] > 0 and "hotspot_node_minutes" in m and "session_mean_ms" in m
    assert set(doc["comparison"]) == {"loadaware", "loadaware-waterline"}
    assert doc["comparison"]["loadaware"]["baseline"] == "kube-default"
    for name in ("service_latency_inflation_mean", "service_latency_inflation_p99", "batch_stretch_p50",
                 "batch_stretch_p95", "cpu_demand_served_percent", "batch_cpu_served_percent", "pods_pending_end"):
        assert name in m
    assert "hotspot node-minutes" in doc["definitions"]
    page = (out / "report.html").read_text()
    assert len(re.findall(r'src="data:image/png;base64,[A-Za-z0-9+/=]{100,}"', page)) == 4
    assert "<script" not in page and "http://" not in page.replace("http://www.w3.org", "")
    assert json.loads((out / "results.json").read_text())["workload"] == doc["workload"]


def test_table_output(capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["sim", "--nodes", "3", "--hours", "0.1", "--compare", "requests", "--no-progress"])
    assert rc == 0
    text = capsys.readouterr().out
    assert "hotspot node-minutes" in text and "requests" in text and "wall" in text


def test_trace_replay_from_fixture_files(capsys: pytest.CaptureFixture[str]) -> None:
    rc = main([
        "sim", "--compare", "requests", "--nodes", "3", "--hours", "0.2", "-o", "json", "--no-progress",
        "--openb-nodes", str(FIXTURES / "openb_nodes.csv"), "--openb-pods", str(FIXTURES / "openb_pods.csv"),
        "--machine-usage", str(FIXTURES / "machine_usage.csv"),
    ])
    assert rc == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["workload"]["name"].startswith("trace(alibaba-v2018+openb")
    assert len(doc["sources"]) == 2


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["--compare", "nope"], "unknown policy 'nope'"),
        (["--compare", "requests", "--conf", "requests=/nonexistent/conf.yaml"], "/nonexistent/conf.yaml"),
        (["--conf", "broken"], "--conf: expected NAME=PATH"),
        (["--compare", "requests", "--waterline", "loadaware=x.yaml"], "not compared"),
    ],
)
def test_configuration_errors_exit_2(argv: list[str], expected: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sim", "--nodes", "2", "--hours", "0.1", "--no-progress", *argv]) == 2
    assert expected in capsys.readouterr().err


def test_bad_trace_file_names_file_line_and_column(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / OPENB_NODES_FILE).parent.mkdir(parents=True)
    (tmp_path / OPENB_NODES_FILE).write_text("sn,cpu_milli,memory_mib\nn1,32000,lots\n")
    (tmp_path / OPENB_PODS_FILE).write_text("name,cpu_milli,memory_mib,creation_time\np,1000,1024,0\n")
    rc = main(["sim", "--trace", "openb", "--trace-dir", str(tmp_path), "--nodes", "2", "--hours", "0.1", "--no-progress"])
    assert rc == 2
    err = capsys.readouterr().err
    assert f"{tmp_path / OPENB_NODES_FILE}: line 2, column 3 (memory_mib): expected a number, got 'lots'" in err


def test_bad_waterline_file_is_rejected_with_its_field(tmp_path: Path) -> None:
    bad = tmp_path / "wl.yaml"
    bad.write_text(
        "apiVersion: qos.loadwise.io/v1alpha1\nkind: WaterlinePolicy\nmetadata: {name: w}\n"
        "spec:\n  objectiveEnsurances:\n  - name: r\n    metricRule: {name: cpu_total_usage, value: '0'}\n"
        "    action: {name: a, eviction: {}}\n"
    )
    policy = load_policies(["loadaware"], waterlines={"loadaware": bad})[0]
    with pytest.raises(ConfigError, match=r"metricRule\.value"):
        Simulation(generate(SyntheticConfig(nodes=2, hours=0.1)), policy, SimOptions(hours=0.1))


def test_policies() -> None:
    assert set(BUILTIN) == {"kube-default", "loadaware", "loadaware-waterline", "loadaware-waterline-capped",
                            "loadaware-waterline-strict", "requests", "binpack", "loadaware-rebalance"}
    for p in load_policies(list(BUILTIN)):
        assert p.conf.actions
        assert bool(p.waterline) == p.name.startswith(("loadaware-waterline", "loadaware-rebalance"))
        assert (p.rebalance is not None) == (p.name == "loadaware-rebalance")
        la = p.conf.plugin("loadaware")
        if p.name.startswith("loadaware-waterline"):
            assert la is not None and la.arguments["respectWaterlines"] == p.name.endswith("capped")
    # The load-aware confs are kube-default's plugins, weights and arguments plus loadaware: only load-awareness
    # differs from the baseline; binpack differs in its NodeResourcesFit strategy alone.
    def plugins(name: str) -> list[tuple[str, int | None, str]]:
        conf = next(iter(load_policies([name]))).conf
        return [(p.name, p.weight, repr(dict(p.arguments))) for tier in conf.tiers for p in tier.plugins]

    kube = plugins("kube-default")
    for name in ("loadaware", "loadaware-waterline", "loadaware-waterline-capped", "loadaware-waterline-strict"):
        assert [p for p in plugins(name) if p[0] != "loadaware"] == kube
        relief = next(iter(load_policies([name]))).conf.plugin("loadaware").arguments.get("relaxAfterSeconds")
        assert relief == (None if name.endswith("strict") else 900)
    assert [(n, w) for n, w, _ in plugins("binpack")] == [(n, w) for n, w, _ in kube]
    assert [a for _, _, a in plugins("binpack") if "MostAllocated" in a]
    # kube-scheduler's default profile weights (apis/config/v1 default plugins, MultiPoint).
    assert {n: w for n, w, _ in kube if w is not None} == {
        "tainttoleration": 3, "nodeaffinity": 2, "podtopologyspread": 2, "interpodaffinity": 2, "noderesources": 1,
        "balancedallocation": 1}
    assert parse_assignments(["a=b.yaml"], "--conf") == {"a": Path("b.yaml")}
    # A conf file for a built-in name keeps that name's waterlines.
    mine = load_policies(["loadaware-waterline"], confs={"loadaware-waterline": BUILTIN["loadaware"][0]})[0]
    assert mine.conf_source.endswith("loadaware.yaml") and mine.waterline_source.endswith("waterline.yaml")


@pytest.mark.slow
def test_loadaware_has_fewer_hotspots_than_kube_default() -> None:
    """A busy afternoon on 10 nodes (fixed seed): usage-aware placement avoids the hot nodes kube's default makes."""
    workload = generate(SyntheticConfig(nodes=10, hours=3, seed=1))
    options = SimOptions(hours=3, start_hour=11, seed=1)
    results = {p.name: measure(run(workload, p, options)) for p in load_policies(list(DEFAULT_COMPARE))}
    base = results["kube-default"].hotspot_node_minutes
    assert base > 100
    assert results["loadaware"].hotspot_node_minutes < 0.8 * base
    # Waterline throttling stretches the throttled jobs (their work is conserved), so on a 3-hour window it need
    # not beat plain loadaware; both beat the baseline.
    assert results["loadaware-waterline"].hotspot_node_minutes < 0.8 * base


def test_seeds_are_parsed_and_refused_clearly() -> None:
    assert parse_seeds("1-5") == [1, 2, 3, 4, 5]
    assert parse_seeds("3,1, 2-3") == [3, 1, 2]
    for bad in ("x", "5-1", "1-"):
        with pytest.raises(ValueError, match="--seeds"):
            parse_seeds(bad)


def test_several_seeds_give_mean_min_max_per_measure(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    rc = main(["sim", "--nodes", "3", "--hours", "0.2", "--start-hour", "13", "--seeds", "1-2", "-o", "json",
               "--no-progress", "--jobs", "2", "--out", str(out)])
    assert rc == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["seeds"] == [1, 2] and set(doc["runs"]) == {"1", "2"}
    runs = {s: doc["runs"][str(s)]["policies"]["kube-default"]["measures"] for s in (1, 2)}
    assert runs[1]["pods_submitted"] != runs[2]["pods_submitted"]  # each seed its own workload
    stats = doc["summary"]["policies"]["kube-default"]["pods_submitted"]
    assert stats["min"] == min(r["pods_submitted"] for r in runs.values())
    assert stats["max"] == max(r["pods_submitted"] for r in runs.values())
    assert stats["mean"] == pytest.approx(sum(r["pods_submitted"] for r in runs.values()) / 2)
    assert stats["by_seed"] == {"1": runs[1]["pods_submitted"], "2": runs[2]["pods_submitted"]}
    assert set(doc["summary"]["comparison"]) == {"loadaware", "loadaware-waterline"}
    assert "Over the seeds" in (out / "report.html").read_text()
    rc = main(["sim", "--nodes", "3", "--hours", "0.1", "--seeds", "1-2", "--compare", "kube-default",
               "--no-progress"])
    assert rc == 0
    assert "mean [min - max] over seeds 1,2" in capsys.readouterr().out


def test_runs_start_longest_first_and_come_back_in_the_order_asked() -> None:
    """Waterline runs go to the workers first, then runs with node agents, each on the larger workload first; the
    records still come back per seed in the order of the policies, equal to those of a serial run."""
    from sim.policies import load_policies
    from sim.run import SimOptions
    from sim.synthetic import SyntheticConfig, generate

    policies = load_policies(["kube-default", "loadaware-waterline", "loadaware"])
    workloads = {s: generate(SyntheticConfig(nodes=3, hours=24.0, seed=s)).window(13 * 3600.0, 13.1 * 3600.0)
                 for s in (1, 2)}
    big = max(workloads, key=lambda s: len(workloads[s].pods))
    small = min(workloads, key=lambda s: len(workloads[s].pods))
    assert len(workloads[big].pods) > len(workloads[small].pods)
    assert longest_first(workloads, policies) == [(big, 1), (small, 1), (big, 2), (small, 2), (big, 0), (small, 0)]
    options = SimOptions(hours=0.1, start_hour=13.0)
    parallel = run_seeds(workloads, policies, options, jobs=2)
    serial = run_seeds(workloads, policies, options, jobs=1)
    for s in workloads:
        assert [r.policy for r in parallel[s]] == ["kube-default", "loadaware-waterline", "loadaware"]
        assert [r.bindings for r in parallel[s]] == [r.bindings for r in serial[s]]
