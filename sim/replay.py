"""Workloads built from public traces (formats in ``sim.traces``).

Two sources, usable alone or together:

* **Alibaba v2018 machine usage** gives *usage shapes*: each machine's CPU series is forward-filled onto a
  regular grid and divided by its mean, and every service pod follows the shape of one machine (one machine
  per app, all pods on the same trace clock, so peaks stay correlated as in the real cluster).  Alone, this
  source reshapes the synthetic workload's services.
* **OpenB 2023 node and pod lists** give the *cluster and the pod stream*: a seeded sample of ``nodes`` nodes
  (CPU, memory and GPUs, the GPUs as the extended resource ``alibaba.com/gpu-milli`` so that GPU sharing is
  modelled as in the trace's paper) and the pods in creation order, with their requests, QoS and lifetimes.
  The published list holds only a few dozen concurrently running pods on 1523 nodes (it is a sample of pod
  *shapes*), so arrivals keep the trace's order and relative spacing (idle stretches beyond the 99th percentile
  gap clipped) but are compressed so that the sampled cluster's scarcest resource (CPU, memory or GPU) reaches
  ``load`` × its allocatable in requests; the list is cycled when more pods are needed.  The stream starts a day early so the cluster begins
  in its steady state (the pods still running at t = 0 are submitted at once).
  OpenB has no usage: pods get the synthetic usage ratios (LS as services, BE as batch), with the v2018 shapes
  when that source is loaded too.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from sim.model import NodeSpec, PodKind, PodSpec, UsageProfile, Workload
from sim.synthetic import BATCH_PRIORITY, PROD_PRIORITY, SyntheticConfig, generate
from sim.traces import (
    MACHINE_USAGE_FILE,
    OPENB_NODES_FILE,
    OPENB_PODS_FILE,
    MachineSeries,
    OpenbNode,
    OpenbPod,
    TraceError,
    read_machine_usage,
    read_openb_nodes,
    read_openb_pods,
    resample,
)

__all__ = [
    "GPU_RESOURCE",
    "TRACE_NAMES",
    "TraceSources",
    "default_trace_dir",
    "resolve_sources",
    "usage_shapes",
    "trace_workload",
]

GPU_RESOURCE = "alibaba.com/gpu-milli"
TRACE_NAMES = ("alibaba-v2018", "openb", "all")
MiB = 1024**2
# The v2018 trace starts at an arbitrary time of day; shapes are read from its second day on.
SHAPE_OFFSET = 86_400.0
# How long before t = 0 the OpenB pod stream starts (pods still running at t = 0 are submitted then).
WARM_START_SECONDS = 86_400.0


@dataclass(frozen=True, slots=True)
class TraceSources:
    machine_usage: Path | None = None
    openb_nodes: Path | None = None
    openb_pods: Path | None = None

    @property
    def openb(self) -> bool:
        return self.openb_nodes is not None and self.openb_pods is not None


def default_trace_dir() -> Path | None:
    """``../shared/traces`` relative to the working directory, else relative to this checkout; None if absent."""
    for base in (Path.cwd(), Path(__file__).resolve().parents[1]):
        cand = (base / ".." / "shared" / "traces").resolve()
        if cand.is_dir():
            return cand
    return None


def resolve_sources(
    names: Sequence[str],
    trace_dir: Path | None,
    *,
    machine_usage: Path | None = None,
    openb_nodes: Path | None = None,
    openb_pods: Path | None = None,
) -> TraceSources:
    """Which files to read: named traces under ``trace_dir``, overridden by explicit file paths."""
    wanted = set()
    for n in names:
        if n not in TRACE_NAMES:
            raise ValueError(f"unknown trace {n!r}; choose from {', '.join(TRACE_NAMES)}")
        wanted |= {"alibaba-v2018", "openb"} if n == "all" else {n}
    if wanted and trace_dir is None and not (machine_usage or openb_nodes or openb_pods):
        raise ValueError("no trace directory: pass --trace-dir (../shared/traces was not found)")

    def pick(name: str, override: Path | None, rel: str) -> Path | None:
        if override is not None:
            return override
        if name in wanted and trace_dir is not None:
            return trace_dir / rel
        return None

    src = TraceSources(
        machine_usage=pick("alibaba-v2018", machine_usage, MACHINE_USAGE_FILE),
        openb_nodes=pick("openb", openb_nodes, OPENB_NODES_FILE),
        openb_pods=pick("openb", openb_pods, OPENB_PODS_FILE),
    )
    if (src.openb_nodes is None) != (src.openb_pods is None):
        raise ValueError("OpenB replay needs both the node list and the pod list")
    return src


def usage_shapes(series: Sequence[MachineSeries], *, step: float) -> npt.NDArray[np.float64]:
    """(machines × steps) relative CPU levels: each series forward-filled on ``step`` and divided by its mean."""
    end = min(float(s.times[-1]) for s in series)
    rows = []
    for s in series:
        cpu = resample(s.times, s.cpu_percent, step=step, start=0.0, end=end)
        mean = float(cpu.mean())
        rows.append(np.maximum(cpu, 0.5) / max(mean, 0.5))
    return np.vstack(rows)


def _with_shapes(pods: Sequence[PodSpec], n_shapes: int, rng: np.random.Generator) -> list[PodSpec]:
    """Services follow one machine's shape per app; their mean level stays what the generator chose."""
    by_app: dict[str, int] = {}
    out = []
    for p in pods:
        if p.kind is not PodKind.SERVICE:
            out.append(p)
            continue
        app = p.labels.get("app", p.name)
        if app not in by_app:
            by_app[app] = int(rng.integers(0, n_shapes))
        mean_level = p.usage.cpu_base_milli * (1 + 0.5 * p.usage.cpu_amplitude)
        usage = dataclasses.replace(
            p.usage, cpu_base_milli=mean_level, cpu_amplitude=0.0, shape_index=by_app[app], shape_offset=SHAPE_OFFSET
        )
        out.append(dataclasses.replace(p, usage=usage))
    return out


def _openb_nodes(nodes: Sequence[OpenbNode], count: int, rng: np.random.Generator) -> tuple[NodeSpec, ...]:
    pick = np.sort(rng.choice(len(nodes), size=min(count, len(nodes)), replace=False))
    out = []
    for i in pick:
        n = nodes[int(i)]
        labels = {"kubernetes.io/hostname": n.name, "node.kubernetes.io/instance-type": f"{n.cpu_milli // 1000}c-{n.model or 'cpu'}"}
        if n.model:
            labels["alibaba.com/gpu-model"] = n.model
        out.append(
            NodeSpec(
                name=n.name,
                cpu_milli=n.cpu_milli,
                memory_bytes=n.memory_mib * MiB,
                labels=labels,
                extended={GPU_RESOURCE: n.gpu * 1000} if n.gpu else {},
            )
        )
    return tuple(out)


def _gpu_request(p: OpenbPod) -> int:
    """GPU thousandths: a single shared GPU asks for its fraction, several GPUs are whole."""
    return p.num_gpu * (p.gpu_milli if p.num_gpu == 1 else 1000)


def _openb_pods(
    trace: Sequence[OpenbPod], capacity: dict[str, float], hours: float, load: float, rng: np.random.Generator
) -> list[PodSpec]:
    """The trace's pods replayed in creation order for ``hours``, spaced so the cluster sits at ``load``.

    The stream starts a day before the simulation so the cluster is in its steady state at t = 0: pods that would
    still be running then are submitted at t = 0 with the rest of their lifetime.
    """
    end = hours * 3600.0
    warm = WARM_START_SECONDS
    ordered = sorted(trace, key=lambda p: (p.creation_time, p.name))
    gaps = _openb_gaps(ordered)
    life = np.maximum(np.array([min((p.deletion_time if p.deletion_time is not None else np.inf) - p.creation_time,
                                    end + warm) for p in ordered]), 60.0)
    scale = (1.0 / _openb_rate(ordered, life, capacity, load)) / max(float(np.mean(gaps)), 1e-9)
    pods: list[PodSpec] = []
    t = -warm
    i = 0
    while t < end:
        k = i % len(ordered)
        arrival, duration = t, float(life[k])
        t += float(gaps[k]) * scale
        i += 1
        if arrival < 0:
            if arrival + duration <= 0:
                continue
            arrival, duration = 0.0, arrival + duration
        pods.append(_openb_pod(ordered[k], f"{ordered[k].name}-r{(i - 1) // len(ordered)}", arrival, duration, rng))
    return pods


def _openb_gaps(ordered: Sequence[OpenbPod]) -> npt.NDArray[np.float64]:
    """The gaps between consecutive creations (the last one repeats the one before it).

    The list's first months hold a few pods days apart: idle stretches beyond the 99th percentile gap would leave
    the compressed stream empty for hours, so they are clipped; bursts and ordinary spacing are kept.
    """
    created = np.array([p.creation_time for p in ordered])
    gaps = np.diff(created, append=created[-1]) if len(created) > 1 else np.ones(1)
    gaps = np.minimum(gaps, float(np.percentile(gaps, 99))) if gaps.size > 1 else gaps
    return gaps if gaps.any() else np.ones_like(gaps)


def _openb_rate(ordered: Sequence[OpenbPod], life: npt.NDArray[np.float64], capacity: dict[str, float], load: float) -> float:
    """Arrivals per second that put the binding resource at ``load``.

    Little's law: concurrent requests = rate x E[request x lifetime].  The rate is solved for the target load on
    every resource and the smallest kept, so the binding one (often the GPUs) sits at ``load``, not beyond.
    """
    demand = {
        "cpu": np.array([p.cpu_milli for p in ordered], dtype=np.float64),
        "memory": np.array([p.memory_mib * MiB for p in ordered], dtype=np.float64),
        GPU_RESOURCE: np.array([_gpu_request(p) for p in ordered], dtype=np.float64),
    }
    return min(
        load * capacity[name] / max(float(np.mean(req * life)), 1e-9)
        for name, req in demand.items()
        if capacity.get(name, 0) > 0 and req.any()
    )


def _openb_pod(src: OpenbPod, name: str, arrival: float, duration: float, rng: np.random.Generator) -> PodSpec:
    """One replayed pod: a service unless best-effort, with a usage profile drawn from ``rng`` (draws in a fixed
    order, so a seed gives the same workload)."""
    service = src.qos != "BE"
    amp = float(rng.uniform(0.25, 0.55)) if service else 0.05
    if service:
        ratio = float(rng.uniform(1.1, 1.8)) if rng.random() < 0.2 else float(np.clip(rng.lognormal(np.log(0.4), 0.35), 0.1, 0.9))
    else:
        ratio = float(rng.uniform(0.6, 1.15))
    cpu_req = max(src.cpu_milli, 1)
    mem_req = src.memory_mib * MiB
    gpu = _gpu_request(src)
    return PodSpec(
        name=name,
        kind=PodKind.SERVICE if service else PodKind.BATCH,
        arrival=arrival,
        duration=duration,
        cpu_request_milli=cpu_req,
        memory_request_bytes=mem_req,
        cpu_limit_milli=cpu_req * 2,
        memory_limit_bytes=int(mem_req * 1.5),
        priority=PROD_PRIORITY if service else BATCH_PRIORITY,
        priority_class_name="loadwise-prod" if service else "loadwise-batch",
        namespace="openb",
        labels={"app": src.name, "openb.qos": src.qos},
        extended_requests={GPU_RESOURCE: gpu} if gpu else {},
        usage=UsageProfile(
            cpu_base_milli=cpu_req * ratio / (1 + amp * 0.5),
            cpu_amplitude=amp,
            cpu_peak=14 / 24 + float(rng.normal(0, 1.5)) / 24 if service else float(rng.random()),
            cpu_noise=float(rng.uniform(0.08, 0.18)) if service else 0.1,
            memory_base_bytes=mem_req * float(rng.uniform(0.45, 0.85)),
            memory_growth=0.1,
        ),
    )


def trace_workload(
    sources: TraceSources,
    *,
    nodes: int = 100,
    hours: float = 24.0,
    seed: int = 1,
    load: float = 0.7,
    shape_step: float = 30.0,
) -> Workload:
    """The workload the given trace files describe (see the module docstring)."""
    if sources.machine_usage is None and not sources.openb:
        raise ValueError("no trace files given")
    rng = np.random.default_rng([seed, 0x7ACE])
    shapes = np.ones((0, 1))
    notes: list[str] = []
    names: list[str] = []
    if sources.machine_usage is not None:
        series = read_machine_usage(sources.machine_usage)
        shapes = usage_shapes(series, step=shape_step)
        names.append("alibaba-v2018")
        notes.append(
            f"usage shapes: CPU series of {len(series)} machines from {sources.machine_usage} "
            f"(Alibaba cluster-trace-v2018), forward-filled on {shape_step:g} s, normalised to mean 1"
        )
    if sources.openb:
        assert sources.openb_nodes is not None and sources.openb_pods is not None
        node_list = read_openb_nodes(sources.openb_nodes)
        pod_list = read_openb_pods(sources.openb_pods)
        node_specs = _openb_nodes(node_list, nodes, rng)
        capacity = {
            "cpu": float(sum(n.cpu_milli for n in node_specs)),
            "memory": float(sum(n.memory_bytes for n in node_specs)),
            GPU_RESOURCE: float(sum(n.extended.get(GPU_RESOURCE, 0) for n in node_specs)),
        }
        pods = _openb_pods(pod_list, capacity, hours, load, rng)
        names.append("openb")
        notes.append(
            f"cluster and pod stream: {len(node_specs)} of {len(node_list)} nodes sampled from {sources.openb_nodes}, "
            f"{len(pods)} pods cycled from the {len(pod_list)} of {sources.openb_pods} (Alibaba cluster-trace-gpu-v2023) "
            f"in creation order, arrivals compressed so the scarcest resource (CPU, memory or GPU) is {load:.0%} requested"
        )
        base = Workload(name="openb", nodes=node_specs, pods=tuple(pods))
    else:
        base = generate(SyntheticConfig(nodes=nodes, hours=hours, seed=seed))
        notes.extend(base.notes)
    groups = base.groups
    pods_out = list(base.pods)
    if shapes.shape[0]:
        pods_out = _with_shapes(pods_out, shapes.shape[0], rng)
    try:
        return Workload(
            name=f"trace({'+'.join(names)}, nodes={len(base.nodes)}, hours={hours:g}, seed={seed})",
            nodes=base.nodes,
            pods=tuple(pods_out),
            groups=groups,
            shapes=shapes,
            shape_step=shape_step,
            notes=tuple(notes),
        )
    except ValueError as exc:  # a user's export with duplicate names, for instance
        raise TraceError(str(exc), path=sources.openb_pods or sources.machine_usage or "") from None
