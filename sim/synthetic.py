"""The built-in synthetic workload: a heterogeneous cluster with services, batch jobs, gangs and best-effort pods.

Everything is drawn from one seeded ``numpy.random.Generator``, so a seed fixes the workload exactly.  The
shape follows what colocation studies of production clusters report (Alibaba v2018, Borg/Autopilot):

* **services** (latency-sensitive, prod priority, Burstable) come as deployments of several replicas with a
  diurnal CPU curve peaking in the afternoon; most over-request (median usage about 40% of the request) but
  about one app in five under-requests and runs above its request at peak — the pods that make request-based
  placement produce hot nodes.  Replicas are replaced every several hours (rolling updates), so placement
  decisions keep happening with real usage on the nodes.
* **batch** jobs (batch priority) arrive all day as a Poisson stream, use roughly what they request with
  little diurnal swing, run minutes to hours; a share of them are gangs of 2–8 workers behind a PodGroup.
* **best-effort** pods (free priority, no requests at all) are bursty and invisible to request accounting.

The batch and best-effort streams start six hours before the simulation, so the cluster begins busy: the pods
still running at t = 0 are submitted at once.  Services roll out over the first ``rollout_seconds``.

Sizes are relative to the cluster's allocatable CPU so that ``--nodes`` scales the load with the cluster.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from sim.model import GroupSpec, NodeSpec, PodKind, PodSpec, UsageProfile, Workload

__all__ = [
    "SyntheticConfig",
    "NODE_TYPES",
    "PROD_PRIORITY",
    "BATCH_PRIORITY",
    "FREE_PRIORITY",
    "PRIORITY_CLASSES",
    "generate",
]

GiB = 1024**3
# (instance type, cores, memory GiB, share of the fleet)
NODE_TYPES: tuple[tuple[str, int, int, float], ...] = (
    ("c16m64", 16, 64, 0.25),
    ("c32m128", 32, 128, 0.35),
    ("c64m256", 64, 256, 0.25),
    ("c96m384", 96, 384, 0.15),
)
ZONES = ("zone-a", "zone-b", "zone-c")
PROD_PRIORITY = 9500
# Batch jobs here request ordinary cpu/memory, as Volcano jobs do.  Koordinator's batch band (5000-5999) is for
# pods that request kubernetes.io/batch-cpu/-memory: its load estimator reads those and would estimate a
# band-5500 pod asking for plain cpu at 250m whatever it requests.  So batch sits just above that band.
BATCH_PRIORITY = 6000
FREE_PRIORITY = 3500
# Batch and best-effort streams start this long before t = 0 (longer than any batch job runs).
WARM_START_SECONDS = 6 * 3600.0
# name -> value; the simulator creates these PriorityClass objects and sets spec.priority as admission would.
PRIORITY_CLASSES = {"loadwise-prod": PROD_PRIORITY, "loadwise-batch": BATCH_PRIORITY, "loadwise-free": FREE_PRIORITY}


@dataclass(frozen=True, slots=True)
class SyntheticConfig:
    """Knobs of the generator; the defaults are the README's demo workload."""

    nodes: int = 100
    hours: float = 24.0
    seed: int = 1
    service_request_fraction: float = 0.42  # service CPU requests / cluster allocatable CPU
    batch_request_fraction: float = 0.18  # mean concurrent batch CPU requests / allocatable CPU
    best_effort_per_node: float = 0.6  # mean concurrent best-effort pods per node
    under_requesting_share: float = 0.2  # share of service apps whose usage exceeds their request
    gang_share: float = 0.3  # share of batch jobs that are gangs
    rollout_seconds: float = 5400.0  # services first roll out over this window
    service_limit_ratio: float = 2.0  # service CPU limit / request (Burstable)
    peak_hour: float = 14.0

    def __post_init__(self) -> None:
        if self.nodes < 1:
            raise ValueError("nodes must be at least 1")
        if not (math.isfinite(self.hours) and self.hours > 0):
            raise ValueError(f"hours must be a positive number, not {self.hours}")


def _nodes(cfg: SyntheticConfig, rng: np.random.Generator) -> tuple[NodeSpec, ...]:
    shares = np.array([t[3] for t in NODE_TYPES])
    counts = np.floor(shares * cfg.nodes).astype(int)
    # Largest remainders get the nodes that rounding left over, so the mix stays close to the shares.
    for i in np.argsort(-(shares * cfg.nodes - counts), kind="stable")[: cfg.nodes - int(counts.sum())]:
        counts[i] += 1
    kinds = np.repeat(np.arange(len(NODE_TYPES)), counts)
    rng.shuffle(kinds)
    out = []
    for i, k in enumerate(kinds):
        itype, cores, mem_gib, _ = NODE_TYPES[int(k)]
        # kubelet reservations: ~4% of CPU and ~6% of memory, as managed offerings reserve.
        out.append(
            NodeSpec(
                name=f"node-{i:03d}",
                cpu_milli=cores * 1000 - max(200, cores * 40),
                memory_bytes=int(mem_gib * GiB * 0.94),
                cpu_capacity_milli=cores * 1000,
                memory_capacity_bytes=mem_gib * GiB,
                labels={
                    "node.kubernetes.io/instance-type": itype,
                    "topology.kubernetes.io/zone": ZONES[i % len(ZONES)],
                    "kubernetes.io/hostname": f"node-{i:03d}",
                },
            )
        )
    return tuple(out)


def _warm(arrival: float, duration: float) -> tuple[float, float] | None:
    """Streams start before t = 0 so the cluster begins busy: a pod still running at 0 arrives then with the
    rest of its run time; one that finished before 0 is dropped."""
    if arrival >= 0:
        return arrival, duration
    if arrival + duration <= 0:
        return None
    return 0.0, arrival + duration


def _round_milli(x: float, step: int = 100) -> int:
    return max(step, int(round(x / step)) * step)


def _services(cfg: SyntheticConfig, rng: np.random.Generator, budget_milli: float, end: float) -> list[PodSpec]:
    pods: list[PodSpec] = []
    peak = cfg.peak_hour / 24.0
    requested = 0.0
    app = 0
    while requested < budget_milli:
        replicas = int(rng.integers(2, 11))
        cores = float(rng.choice([1, 2, 4, 8, 12], p=[0.1, 0.25, 0.3, 0.25, 0.1]))
        cpu_req = _round_milli(cores * 1000)
        mem_req = int(cores * float(rng.choice([2, 4, 8], p=[0.3, 0.5, 0.2])) * GiB)
        if rng.random() < cfg.under_requesting_share:
            ratio = float(rng.uniform(1.1, 1.8))
        else:
            ratio = float(np.clip(rng.lognormal(np.log(0.4), 0.35), 0.1, 0.9))
        amp = float(rng.uniform(0.25, 0.55))
        app_peak = peak + float(rng.normal(0, 1.5)) / 24.0
        noise = float(rng.uniform(0.08, 0.18))
        mem_ratio = float(rng.uniform(0.45, 0.85))
        for r in range(replicas):
            t = float(rng.uniform(0, cfg.rollout_seconds))
            gen = 0
            while t < end:
                life = float(rng.uniform(6, 30)) * 3600.0
                pods.append(
                    PodSpec(
                        name=f"svc-{app:03d}-{r}-{gen}",
                        kind=PodKind.SERVICE,
                        arrival=t,
                        duration=life,
                        cpu_request_milli=cpu_req,
                        memory_request_bytes=mem_req,
                        cpu_limit_milli=int(cpu_req * cfg.service_limit_ratio),
                        memory_limit_bytes=int(mem_req * 1.5),
                        priority=PROD_PRIORITY,
                        priority_class_name="loadwise-prod",
                        namespace="prod",
                        labels={"app": f"svc-{app:03d}"},
                        usage=UsageProfile(
                            cpu_base_milli=cpu_req * ratio / (1 + amp * 0.5),
                            cpu_amplitude=amp,
                            cpu_peak=app_peak,
                            cpu_noise=noise,
                            memory_base_bytes=mem_req * mem_ratio * 0.9,
                            memory_growth=0.1,
                        ),
                    )
                )
                requested += cpu_req if gen == 0 else 0
                t += life
                gen += 1
        app += 1
    return pods


def _batch(
    cfg: SyntheticConfig, rng: np.random.Generator, budget_milli: float, end: float
) -> tuple[list[PodSpec], list[GroupSpec]]:
    # Mean request per job (cores x workers) and mean duration fix the arrival rate for the concurrency target.
    mean_cores, mean_workers, mean_duration = 4.4, 1 + cfg.gang_share * 4.0, 4400.0
    rate = budget_milli / (mean_cores * 1000 * mean_workers * mean_duration)
    pods: list[PodSpec] = []
    groups: list[GroupSpec] = []
    t = -WARM_START_SECONDS + float(rng.exponential(1 / rate))
    job = 0
    while t < end:
        arrival = t
        t += float(rng.exponential(1 / rate))
        gang = rng.random() < cfg.gang_share
        workers = int(rng.integers(2, 9)) if gang else 1
        cores = float(rng.choice([2, 4, 8], p=[0.4, 0.4, 0.2]))
        cpu_req = _round_milli(cores * 1000)
        mem_req = int(cores * float(rng.choice([2, 4], p=[0.6, 0.4])) * GiB)
        duration = float(np.clip(rng.lognormal(np.log(3600), 0.7), 600, 6 * 3600))
        ratio = float(rng.uniform(0.6, 1.15))
        warm = _warm(arrival, duration)
        if warm is None:
            continue
        arrival, duration = warm
        group = f"job-{job:04d}" if gang else ""
        if gang:
            groups.append(GroupSpec(name=group, min_member=workers, namespace="batch"))
        for w in range(workers):
            pods.append(
                PodSpec(
                    name=f"job-{job:04d}-{w}",
                    kind=PodKind.BATCH,
                    arrival=arrival,
                    duration=duration,
                    cpu_request_milli=cpu_req,
                    memory_request_bytes=mem_req,
                    cpu_limit_milli=cpu_req * 2,
                    memory_limit_bytes=mem_req * 2,
                    priority=BATCH_PRIORITY,
                    priority_class_name="loadwise-batch",
                    namespace="batch",
                    group=group,
                    labels={"job": f"job-{job:04d}"},
                    usage=UsageProfile(
                        cpu_base_milli=cpu_req * ratio,
                        cpu_amplitude=0.05,
                        cpu_peak=float(rng.random()),
                        cpu_noise=0.1,
                        memory_base_bytes=mem_req * float(rng.uniform(0.5, 0.9)),
                        memory_growth=0.2,
                    ),
                )
            )
        job += 1
    return pods, groups


def _best_effort(cfg: SyntheticConfig, rng: np.random.Generator, end: float) -> list[PodSpec]:
    mean_duration = 3000.0
    rate = cfg.best_effort_per_node * cfg.nodes / mean_duration
    pods: list[PodSpec] = []
    t = -WARM_START_SECONDS + float(rng.exponential(1 / rate)) if rate > 0 else end
    i = 0
    while t < end:
        warm = _warm(t, float(rng.exponential(mean_duration)) + 300.0)
        t += float(rng.exponential(1 / rate))
        cpu = float(np.clip(rng.lognormal(np.log(700), 0.6), 100, 4000))
        peak = float(rng.random())
        memory = float(rng.uniform(0.25, 2.0)) * GiB
        if warm is None:
            continue
        pods.append(
            PodSpec(
                name=f"be-{i:05d}",
                kind=PodKind.BEST_EFFORT,
                arrival=warm[0],
                duration=warm[1],
                cpu_request_milli=0,
                memory_request_bytes=0,
                priority=FREE_PRIORITY,
                priority_class_name="loadwise-free",
                namespace="best-effort",
                labels={"tier": "best-effort"},
                usage=UsageProfile(
                    cpu_base_milli=cpu,
                    cpu_amplitude=0.1,
                    cpu_peak=peak,
                    cpu_noise=0.35,
                    memory_base_bytes=memory,
                    memory_growth=0.1,
                ),
            )
        )
        i += 1
    return pods


def generate(cfg: SyntheticConfig | None = None) -> Workload:
    """The synthetic workload for ``cfg`` (deterministic in ``cfg.seed``)."""
    cfg = cfg or SyntheticConfig()
    rng = np.random.default_rng(cfg.seed)
    end = cfg.hours * 3600.0
    nodes = _nodes(cfg, rng)
    allocatable = float(sum(n.cpu_milli for n in nodes))
    services = _services(cfg, rng, cfg.service_request_fraction * allocatable, end)
    batch, groups = _batch(cfg, rng, cfg.batch_request_fraction * allocatable, end)
    best_effort = _best_effort(cfg, rng, end)
    pods = sorted(services + batch + best_effort, key=lambda p: (p.arrival, p.name))
    return Workload(
        name=f"synthetic(nodes={cfg.nodes}, hours={cfg.hours:g}, seed={cfg.seed})",
        nodes=nodes,
        pods=tuple(pods),
        groups=tuple(groups),
        notes=(
            f"{len(nodes)} nodes of {len(NODE_TYPES)} instance types, {len(services)} service pods "
            f"(diurnal, peak at {cfg.peak_hour:g}:00), {len(batch)} batch pods in "
            f"{len({p.labels['job'] for p in batch})} jobs ({len(groups)} gangs), {len(best_effort)} best-effort pods",
            f"services request {cfg.service_request_fraction:.0%} of allocatable CPU (about one app in "
            f"{round(1 / cfg.under_requesting_share) if cfg.under_requesting_share else 0} uses more than it requests), "
            f"batch {cfg.batch_request_fraction:.0%} on average, best-effort pods request nothing",
        ),
    )
