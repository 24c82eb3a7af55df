"""Trace parsers: small fixtures, every kind of bad file, and the real public traces when present."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from sim.model import PodKind
from sim.replay import GPU_RESOURCE, TraceSources, default_trace_dir, resolve_sources, trace_workload, usage_shapes
from sim.traces import (
    MACHINE_USAGE_FILE,
    OPENB_NODES_FILE,
    OPENB_PODS_FILE,
    TraceError,
    read_machine_usage,
    read_openb_nodes,
    read_openb_pods,
    resample,
)

FIXTURES = Path(__file__).parent / "fixtures"


def test_machine_usage_fixture_is_grouped_and_sorted() -> None:
    series = read_machine_usage(FIXTURES / "machine_usage.csv")
    # m_3 has a single sample and is not a series.
    assert [s.machine for s in series] == ["m_1", "m_2"]
    m1 = series[0]
    assert m1.times.tolist() == [0, 30, 90]
    assert m1.cpu_percent.tolist() == [10, 20, 30]
    assert m1.mem_percent.tolist() == [50, 51, 52]
    only = read_machine_usage(FIXTURES / "machine_usage.csv", machines=["m_2"])
    assert [s.machine for s in only] == ["m_2"]


def test_resample_forward_fills_and_backfills_the_start() -> None:
    times = np.array([10.0, 30.0, 90.0])
    values = np.array([1.0, 2.0, 3.0])
    out = resample(times, values, step=20, start=0, end=120)
    assert out.tolist() == [1.0, 1.0, 2.0, 2.0, 2.0, 3.0]


def test_usage_shapes_have_mean_one() -> None:
    shapes = usage_shapes(read_machine_usage(FIXTURES / "machine_usage.csv"), step=10)
    assert shapes.shape[0] == 2
    assert np.allclose(shapes.mean(axis=1), 1.0)


def test_openb_fixtures() -> None:
    nodes = read_openb_nodes(FIXTURES / "openb_nodes.csv")
    assert [(n.name, n.cpu_milli, n.memory_mib, n.gpu, n.model) for n in nodes][:2] == [
        ("node-a", 32000, 131072, 0, ""),
        ("node-b", 96000, 393216, 8, "G2"),
    ]
    assert nodes[3].gpu == 0  # empty gpu cell
    pods = read_openb_pods(FIXTURES / "openb_pods.csv")
    assert len(pods) == 4
    assert pods[2].deletion_time == 7320 and pods[2].num_gpu == 2
    assert pods[3].scheduled_time is None and pods[3].deletion_time is None and pods[3].qos == "Burstable"


def _write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("m_1,0,10,50\nm_1,x,10,50\n", "line 2, column 2 (time_stamp): expected a number, got 'x'"),
        ("m_1,0,10,50\nm_1,30,101,50\n", "line 2, column 3 (cpu_util_percent): 101 is out of range (0..100)"),
        ("m_1,0,10,50\nm_1,30,10\n", "line 2: expected at least 4 columns"),
        ("m_1,0,10,50\n,30,10,50\n", "line 2, column 1 (machine_id): empty machine id"),
        ("m_1,-5,10,50\n", "line 1, column 2 (time_stamp): -5 is out of range (>= 0)"),
        ("m_1,0,10,nan\n", "line 1, column 4 (mem_util_percent): expected a finite number"),
        ("", "no usable rows"),
    ],
)
def test_machine_usage_errors_name_file_line_and_column(tmp_path: Path, text: str, expected: str) -> None:
    path = _write(tmp_path, "usage.csv", text)
    with pytest.raises(TraceError) as err:
        read_machine_usage(path)
    assert str(err.value).startswith(f"{path}: ")
    assert expected in str(err.value)


def test_missing_file_is_a_trace_error(tmp_path: Path) -> None:
    with pytest.raises(TraceError, match="file not found"):
        read_machine_usage(tmp_path / "nope.csv")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("sn,cpu_milli\nn1,100\n", "line 1: header lacks column(s) memory_mib"),
        ("sn,cpu_milli,memory_mib\nn1,1000,abc\n", "line 2, column 3 (memory_mib): expected a number, got 'abc'"),
        ("sn,cpu_milli,memory_mib\nn1,0,100\n", "line 2, column 2 (cpu_milli): 0 is out of range (>= 1)"),
        ("sn,cpu_milli,memory_mib\nn1,1,1\nn1,1,1\n", "line 3, column 1 (sn): duplicate node 'n1'"),
        ("sn,cpu_milli,memory_mib\n", "no nodes"),
        ("", "empty file"),
    ],
)
def test_openb_node_errors(tmp_path: Path, text: str, expected: str) -> None:
    path = _write(tmp_path, "nodes.csv", text)
    with pytest.raises(TraceError) as err:
        read_openb_nodes(path)
    assert expected in str(err.value)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("name,cpu_milli,memory_mib\np,1,1\n", "header lacks column(s) creation_time"),
        ("name,cpu_milli,memory_mib,creation_time\np,1,1,\n", "line 2, column 4 (creation_time): required value is empty"),
        (
            "name,cpu_milli,memory_mib,creation_time,deletion_time\np,1,1,100,50\n",
            "line 2, column 5 (deletion_time): deletion_time 50 is before creation_time 100",
        ),
        ("memory_mib,name,cpu_milli,creation_time\n1,p,-1,0\n", "line 2, column 3 (cpu_milli): -1 is out of range"),
    ],
)
def test_openb_pod_errors(tmp_path: Path, text: str, expected: str) -> None:
    path = _write(tmp_path, "pods.csv", text)
    with pytest.raises(TraceError) as err:
        read_openb_pods(path)
    assert expected in str(err.value)


def test_resolve_sources(tmp_path: Path) -> None:
    src = resolve_sources(["all"], tmp_path)
    assert src.machine_usage == tmp_path / MACHINE_USAGE_FILE
    assert src.openb_pods == tmp_path / OPENB_PODS_FILE
    only = resolve_sources([], None, machine_usage=tmp_path / "u.csv")
    assert only.machine_usage == tmp_path / "u.csv" and not only.openb
    with pytest.raises(ValueError, match="unknown trace"):
        resolve_sources(["bogus"], tmp_path)
    with pytest.raises(ValueError, match="needs both"):
        resolve_sources([], None, openb_nodes=tmp_path / "n.csv")


def test_fixture_workload_from_openb_and_shapes() -> None:
    sources = TraceSources(
        machine_usage=FIXTURES / "machine_usage.csv",
        openb_nodes=FIXTURES / "openb_nodes.csv",
        openb_pods=FIXTURES / "openb_pods.csv",
    )
    w = trace_workload(sources, nodes=4, hours=2, seed=3, shape_step=10)
    assert len(w.nodes) == 4
    assert w.shapes.shape[0] == 2
    gpu_nodes = [n for n in w.nodes if n.extended]
    assert all(n.extended[GPU_RESOURCE] % 1000 == 0 for n in gpu_nodes)
    assert w.pods and all(p.namespace == "openb" for p in w.pods)
    # BE pods are batch work, LS pods services following a replayed shape.
    kinds = {p.labels["openb.qos"]: p.kind for p in w.pods}
    assert kinds["BE"] is PodKind.BATCH and kinds["LS"] is PodKind.SERVICE
    assert all(p.usage.shape_index >= 0 for p in w.pods if p.kind is PodKind.SERVICE)
    shared = [p for p in w.pods if p.labels["app"] == "pod-0"]
    assert shared[0].extended_requests == {GPU_RESOURCE: 500}
    # Same seed, same workload.
    again = trace_workload(sources, nodes=4, hours=2, seed=3, shape_step=10)
    assert again.pods == w.pods and again.nodes == w.nodes


REAL = default_trace_dir()
needs_real = pytest.mark.skipif(REAL is None, reason="../shared/traces is absent")


@needs_real
def test_real_alibaba_v2018_machine_usage() -> None:
    assert REAL is not None
    series = read_machine_usage(REAL / MACHINE_USAGE_FILE)
    assert len(series) == 16
    assert sum(s.times.size for s in series) == 100_002
    assert all(s.cpu_percent.min() >= 0 and s.cpu_percent.max() <= 100 for s in series)
    assert max(float(s.times[-1]) for s in series) == 691_180


@needs_real
def test_real_openb_lists() -> None:
    assert REAL is not None
    nodes = read_openb_nodes(REAL / OPENB_NODES_FILE)
    pods = read_openb_pods(REAL / OPENB_PODS_FILE)
    assert len(nodes) == 1523 and len(pods) == 8152
    assert {p.qos for p in pods} >= {"LS", "BE"}
    assert sum(1 for p in pods if p.scheduled_time is None) == 897


@needs_real
def test_real_trace_workload_reaches_the_target_load() -> None:
    assert REAL is not None
    w = trace_workload(resolve_sources(["all"], REAL), nodes=40, hours=6, seed=1, load=0.6)
    assert len(w.nodes) == 40 and w.shapes.shape[0] == 16
    # Little's law check: concurrent CPU requests are near the target from the start (the stream is warm).
    t = np.arange(0, 6 * 3600, 600.0)
    alloc = sum(n.cpu_milli for n in w.nodes)
    conc = [
        sum(p.cpu_request_milli for p in w.pods if p.arrival <= x < p.arrival + (p.duration or np.inf)) / alloc
        for x in t
    ]
    assert 0.35 < float(np.mean(conc)) < 0.9
    assert conc[0] > 0.3
