"""One simulated run: a workload, one scheduler conf (+ optional waterlines), a simulated clock, the real code.

Every tick (``tick_seconds`` of simulated time) the simulator, in this order:

1. finishes pods whose run time is over (phase ``Succeeded``, then deleted) and submits the pods that arrive
   (created without ``nodeName`` for ``loadwise-scheduler``; a gang's PodGroup with its first member);
2. computes every running pod's CPU demand from the workload model (capped by its CPU limit), caps it at any
   waterline quota and shares each node's cores out by CFS shares when demand exceeds them (``sim.contention``);
   batch and best-effort pods progress at the speed they got (their end moves out when they got less than they
   wanted), services record their latency inflation; node usage is what the pods got plus a small system part;
3. records the usage into each node's agent history and lets the agents whose report falls in the tick's first
   half write their NodeMetric status (``sim.agents``) — the scheduler sees usage only through these lagging
   reports (a policy that reads no usage, the request-based baseline, runs without agents, as a cluster without
   Loadwise does); a report is built only when a session or rebalancing round may read it, before the node's next
   report replaces it;
4. for a waterline policy, ticks the real waterline engine of each node with a ``NodeState`` built from the
   simulated pods (``sim.waterline``); evicted pods are re-created as new pending pods, as a controller would;
   for a rebalancing policy, then runs a round of the real rebalancer (``sim.rebalance``), whose evictions are
   re-created the same way;
5. runs one scheduling session of the real scheduler if any pod is pending; bindings go through the cluster;
6. lets the agents whose report falls in the tick's second half write theirs, for the next session to see.

Nothing here decides placement, eviction or throttling: those come from the production classes.
"""

from __future__ import annotations

import gc
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from agent.nodemetric import MetricCollectPolicy, PodMeta
from agent.qos.state import ContainerState, PodState, refresh_usage
from common.clock import FakeClock, to_rfc3339
from common.cluster import NotFound
from common.cluster.memory import MemoryCluster
from common.objects import PodView
from sim.agents import SimAgents
from sim.contention import advance_work, cpu_shares, fair_share, latency_inflation
from sim.model import PodKind, PodSpec, Workload
from sim.objects import (
    node_labels,
    node_object,
    pod_object,
    podgroup_object,
    priority_class_object,
    queue_object,
    with_uid,
)
from sim.record import KIND_CODES, RunRecord
from sim.synthetic import PRIORITY_CLASSES
from sim.usage import UsageModel
from sim.waterline import CPU_PERIOD_US, SimWaterline

if TYPE_CHECKING:
    from sim.rebalance import SimRebalancer

__all__ = ["Policy", "SimOptions", "SessionRunner", "SchedulerFactory", "default_scheduler_factory", "TickUsage",
           "Simulation", "run"]

GiB = 1024**3
_COLLECT_SECONDS = 3600.0  # simulated time between two runs of the (otherwise paused) cyclic garbage collector
_END_TOLERANCE = 1e-6  # seconds: a pod whose end falls this close after a step's start finishes at that step


class SessionResultLike(Protocol):
    placements: dict[str, str | None]
    evictions: list[str]
    pending_messages: dict[str, str]


class SessionRunner(Protocol):
    def run_once(self) -> Any: ...


SchedulerFactory = Callable[[MemoryCluster, Any, FakeClock], SessionRunner]


def default_scheduler_factory(cluster: MemoryCluster, conf: Any, clock: FakeClock) -> SessionRunner:
    """The production scheduler, as the daemon builds it."""
    from scheduler.engine import Scheduler

    return Scheduler(cluster, conf, clock=clock)


@dataclass(frozen=True, slots=True)
class Policy:
    """A compared configuration: a scheduler conf and, for waterline variants, WaterlinePolicy objects."""

    name: str
    conf: Any  # scheduler.conf.SchedulerConf (kept opaque so tests can pass their own)
    conf_source: str = ""
    waterline: tuple[Mapping[str, Any], ...] = ()
    waterline_source: str = ""
    node_agents: bool = True  # whether the node agents run (NodeMetric reports, waterlines)
    rebalance: Any = None  # rebalancer.args.RebalanceArgs: the rebalancer runs (sim.rebalance)


@dataclass(frozen=True, slots=True)
class SimOptions:
    hours: float = 24.0
    tick_seconds: float = 60.0
    report_interval_seconds: int = 60
    aggregate_duration_seconds: int = 300
    system_cpu_fraction: float = 0.02  # of node CPU capacity: kubelet, runtime, daemons
    system_memory_bytes: int = GiB
    start_hour: float = 0.0  # time of day the simulation starts at (the workload's diurnal curves follow it)
    epoch: float = 1_700_006_400.0  # a midnight (UTC): the simulated day's wall-clock origin
    seed: int = 1
    hotspot_cpu_percent: float = 65.0
    hotspot_memory_percent: float = 95.0

    def __post_init__(self) -> None:
        for name in ("tick_seconds", "hours"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0):
                raise ValueError(f"{name} must be a positive number, not {value}")
        if not 0 <= self.start_hour < 24:
            raise ValueError("start_hour must be in [0, 24)")

    @property
    def start_time(self) -> float:
        """Wall-clock time of the first tick on the simulated clock."""
        return self.epoch + self.start_hour * 3600.0

    @property
    def ticks(self) -> int:
        return int(math.ceil(self.hours * 3600.0 / self.tick_seconds))


@dataclass(slots=True)
class _Pod:
    index: int
    spec: PodSpec
    name: str
    uid: str
    created: float
    obj: dict[str, Any]  # the Pod as the cluster last returned it
    node: int = -1
    started: float = 0.0
    message: str = ""
    _meta: PodMeta | None = None
    _view: PodView | None = None
    _default_quota: int | None = None
    _state: PodState | None = None  # what the waterline engine last saw of it (its fixed fields are reused)
    key: str = field(init=False)  # namespace/name, made once: looked up for every running pod every tick

    def __post_init__(self) -> None:
        self.key = f"{self.spec.namespace}/{self.name}"

    @property
    def meta(self) -> PodMeta:
        """What the node agent knows of the pod (parsed when an agent first reports it)."""
        if self._meta is None:
            self._meta = PodMeta.from_pod(self.obj)
        return self._meta

    @property
    def view(self) -> PodView:
        """The parsed pod (when the waterline engine first looks at it)."""
        if self._view is None:
            self._view = PodView.parse(self.obj)
        return self._view

    @property
    def default_quota_us(self) -> int:
        """The CFS quota its CPU limit gives the pod (-1: unlimited), before any waterline throttles it."""
        if self._default_quota is None:
            limit = self.view.limits.get("cpu", 0)
            self._default_quota = int(limit * CPU_PERIOD_US / 1000) if limit else -1
        return self._default_quota

    def update(self, obj: dict[str, Any]) -> None:
        self.obj, self._meta, self._view, self._default_quota, self._state = obj, None, None, None, None


@dataclass(slots=True)
class _Counters:
    bindings: int = 0
    ran: set[int] = field(default_factory=set)
    submitted: set[int] = field(default_factory=set)
    waits: list[float] = field(default_factory=list)
    wait_classes: list[str] = field(default_factory=list)  # per binding: "gang", or the pod kind's value
    waterline_evictions: int = 0
    scheduler_evictions: int = 0
    rebalancer_evictions: int = 0
    evicted_by_kind: dict[str, int] = field(default_factory=dict)
    sessions: list[tuple[float, float, int]] = field(default_factory=list)  # (wall s, CPU s, pods placed)
    requeued: int = 0
    stretch: dict[str, list[float]] = field(default_factory=dict)  # finite pods that finished: run time / planned


@dataclass(frozen=True, slots=True)
class TickUsage:
    """One step's usage: the running pods (in order) with their workload index, node, CPU demand and CPU served
    (millicores) and memory (bytes); per node, CPU and memory including the system's part."""

    running: list[_Pod]
    idx: np.ndarray
    node: np.ndarray
    demand: np.ndarray
    served: np.ndarray
    mem: np.ndarray
    node_cpu: np.ndarray
    node_mem: np.ndarray

    @classmethod
    def idle(cls, sys_cpu: np.ndarray, sys_mem: np.ndarray) -> TickUsage:
        empty, none = np.zeros(0), np.zeros(0, dtype=np.int64)
        return cls([], none, none, empty, empty, empty, sys_cpu, sys_mem)


class _Phases:
    """CPU time per phase of the loop (``with phases("usage"): ...``), for ``benchmarks/sim_runtime.py`` and
    ``benchmarks/sim_goal.py``: process time, so what other processes on the machine do does not count."""

    NAMES = ("pods", "usage", "agent-record", "agent-report", "waterline", "rebalancer", "scheduler")

    def __init__(self) -> None:
        self.seconds = dict.fromkeys(self.NAMES, 0.0)
        self._name = ""
        self._t0 = 0.0

    def __call__(self, name: str) -> _Phases:
        self._name = name
        return self

    def __enter__(self) -> None:
        self._t0 = time.process_time()

    def __exit__(self, *exc: object) -> None:
        self.seconds[self._name] += time.process_time() - self._t0

    def rounded(self) -> dict[str, float]:
        return {k: round(v, 3) for k, v in self.seconds.items()}


class Simulation:
    def __init__(
        self,
        workload: Workload,
        policy: Policy,
        options: SimOptions,
        *,
        scheduler_factory: SchedulerFactory = default_scheduler_factory,
    ) -> None:
        self.workload = workload
        self.policy = policy
        self.options = options
        self.clock = FakeClock(options.start_time)
        # The simulator plays the kubelet (``_start``), so the cluster does not start pods by itself.  Nothing in
        # the simulator watches (the informers are fed as events happen), so the watch history keeps only the last
        # event: an object's replaced version is freed at once, while its memory is still in the CPU's caches.
        self.cluster = MemoryCluster(clock=self.clock, auto_run=False, history=1)
        self.nodes = list(workload.nodes)
        self.node_index = {n.name: i for i, n in enumerate(self.nodes)}
        self._node_labels = [node_labels(n) for n in self.nodes]
        self.model = UsageModel(
            workload, seed=options.seed, tick_seconds=options.tick_seconds, day_offset=options.start_hour * 3600.0
        )
        self._init_contention()
        self._setup_cluster()
        collect = MetricCollectPolicy(
            aggregate_duration_seconds=options.aggregate_duration_seconds,
            report_interval_seconds=options.report_interval_seconds,
            durations=(),  # the simulated agents report no aggregated usages (sim.agents)
        )
        self.agents: SimAgents | None = None
        if policy.node_agents or policy.waterline:
            self.agents = SimAgents(self.cluster, self.nodes, collect, tick_seconds=options.tick_seconds)
            self.agents.create_nodemetrics()
        self.waterline: SimWaterline | None = None
        if policy.waterline:
            for obj in policy.waterline:
                self.cluster.create("WaterlinePolicy", with_uid("WaterlinePolicy", obj))
            self.waterline = SimWaterline(
                self.cluster, self.clock, self.nodes, policy.waterline,
                tick_seconds=options.tick_seconds, source=policy.waterline_source,
            )
        self.scheduler = scheduler_factory(self.cluster, policy.conf, self.clock)
        self.rebalancer: SimRebalancer | None = None
        if policy.rebalance is not None:
            from sim.rebalance import SimRebalancer

            self.rebalancer = SimRebalancer(self.cluster, self.clock, policy.conf, policy.rebalance,
                                            tick_seconds=options.tick_seconds, scheduler=self.scheduler)
        self._pending: dict[str, _Pod] = {}
        self._running: dict[str, _Pod] = {}
        self._by_uid: dict[str, _Pod] = {}
        self._next_arrival = 0
        self._group_left = {g.name: 0 for g in workload.groups}
        for p in workload.pods:
            if p.group:
                self._group_left[p.group] += 1
        self._groups_created: set[str] = set()
        self._attempts: dict[int, int] = {}
        self._bind_seen = 0
        self._evict_seen = 0
        self.counters = _Counters()

    # -- setup -----------------------------------------------------------------------------------------------
    def _init_contention(self) -> None:
        """Per node: capacity, the system's part and what is left for pods; per workload pod: its CFS shares, its
        class, and for a finite pod the full-speed seconds it still has to run and its projected end."""
        pods, opts = self.workload.pods, self.options
        self._cap_cpu = np.array([nd.capacity_cpu for nd in self.nodes], dtype=np.float64)
        self._sys_cpu = self._cap_cpu * opts.system_cpu_fraction
        self._sys_mem = np.full(len(self.nodes), float(opts.system_memory_bytes))
        self._pod_room = self._cap_cpu - self._sys_cpu
        self._shares = cpu_shares(np.array([p.cpu_request_milli for p in pods], dtype=np.float64))
        self._kind = np.array([KIND_CODES[p.kind] for p in pods], dtype=np.int64)
        self._finite = np.array([p.kind is not PodKind.SERVICE and p.duration is not None for p in pods], dtype=bool)
        self._work_left = np.zeros(len(pods))
        self._ends = np.full(len(pods), math.inf)

    def _setup_cluster(self) -> None:
        for name, value in PRIORITY_CLASSES.items():
            self.cluster.create("PriorityClass", priority_class_object(name, value))
        self.cluster.create("Queue", queue_object())
        for n in self.nodes:
            self.cluster.create("Node", node_object(n))

    # -- pods ------------------------------------------------------------------------------------------------
    def _submit(self, index: int, t: float) -> None:
        spec = self.workload.pods[index]
        attempt = self._attempts.get(index, 0)
        self._attempts[index] = attempt + 1
        if spec.group and spec.group not in self._groups_created:
            group = next(g for g in self.workload.groups if g.name == spec.group)
            self.cluster.create("PodGroup", podgroup_object(group, priority_class_name=spec.priority_class_name))
            self._groups_created.add(spec.group)
        name = spec.name if attempt == 0 else f"{spec.name}-r{attempt}"
        obj = self.cluster.create("Pod", pod_object(spec, name, index=index))
        pod = _Pod(index, spec, name, obj["metadata"]["uid"], t, obj)
        self._pending[pod.key] = pod
        self._by_uid[pod.uid] = pod
        self.counters.submitted.add(index)

    def _arrivals(self, t: float) -> None:
        pods = self.workload.pods
        while self._next_arrival < len(pods) and pods[self._next_arrival].arrival <= t:
            self._submit(self._next_arrival, t)
            self._next_arrival += 1

    def _finish(self, t: float) -> None:
        ends = self._ends
        done = [p for p in self._running.values() if ends[p.index] <= t + _END_TOLERANCE]
        for p in done:
            if self._finite[p.index]:
                duration = p.spec.duration or 0.0
                stretch = (ends[p.index] - p.started) / duration if duration > 0 else 1.0
                self.counters.stretch.setdefault(p.spec.kind.value, []).append(stretch)
            # a fresh status handed over; the stored version it returns is not needed (no copy made)
            self.cluster.write_status("Pod", p.name, {"phase": "Succeeded"}, namespace=p.spec.namespace)
            self.cluster.delete("Pod", p.name, namespace=p.spec.namespace)
            self._forget(p)
            if p.spec.group:
                self._group_left[p.spec.group] -= 1
                if self._group_left[p.spec.group] == 0:
                    self.cluster.delete("PodGroup", p.spec.group, namespace=p.spec.namespace)

    def _forget(self, p: _Pod) -> None:
        self._running.pop(p.key, None)
        self._pending.pop(p.key, None)
        self._by_uid.pop(p.uid, None)
        if self.waterline is not None:
            self.waterline.quota.forget(p.uid)

    def _collect_bindings(self, t: float) -> int:
        bindings = self.cluster.bindings
        placed = 0
        for key, node in bindings[self._bind_seen :]:
            p = self._pending.pop(key, None)
            if p is None:
                continue
            p.node = self.node_index[node]
            p.started = t
            if self.rebalancer is not None:
                self.rebalancer.bound(p.index, node)
            self._start(p)
            self._plan_end(p, t)
            self._running[key] = p
            self.counters.bindings += 1
            self.counters.ran.add(p.index)
            self.counters.waits.append(t - p.created)
            self.counters.wait_classes.append("gang" if p.spec.group else p.spec.kind.value)
            placed += 1
        self._bind_seen = len(bindings)
        return placed

    def _plan_end(self, p: _Pod, t: float) -> None:
        """A bound pod's end: a service's is fixed, a finite pod's moves with the CPU it gets (``_account``).  The
        step it starts in is run at full speed: its usage is first sampled at the next step."""
        duration = p.spec.duration
        if duration is not None and p.spec.kind is PodKind.SERVICE and self._attempts[p.index] > 1:
            # A replacement service pod serves out the original replica's planned lifetime.
            duration = max(60.0, p.spec.arrival + duration - t)
        self._ends[p.index] = t + duration if duration is not None else math.inf
        if self._finite[p.index]:
            self._work_left[p.index] = max(0.0, (duration or 0.0) - self.options.tick_seconds)

    def _start(self, p: _Pod) -> None:
        """The kubelet's part: the bound pod starts, with the conditions and times a real kubelet writes."""
        now = to_rfc3339(self.clock.now())
        conditions = [
            {"type": c, "status": "True", "lastProbeTime": None, "lastTransitionTime": now}
            for c in ("PodScheduled", "Initialized", "ContainersReady", "Ready")
        ]
        # A fresh status handed over, and the stored version kept as it is: the simulator only reads it.
        obj = self.cluster.write_status(
            "Pod", p.name, {"phase": "Running", "startTime": now, "conditions": conditions}, namespace=p.spec.namespace
        )
        p.update(obj)

    def _collect_evictions(self, t: float, *, by_waterline: bool, by_rebalancer: bool = False) -> None:
        evictions = self.cluster.evictions
        for key in evictions[self._evict_seen :]:
            p = self._running.get(key) or self._pending.get(key)
            if p is None:
                continue
            self._forget(p)
            if by_rebalancer and self.rebalancer is not None:
                self.counters.rebalancer_evictions += 1
                self.rebalancer.evicted(key, p.index, t, t - p.started, p.spec.kind is not PodKind.SERVICE)
            elif by_waterline:
                self.counters.waterline_evictions += 1
            else:
                self.counters.scheduler_evictions += 1
            kind = p.spec.kind.value
            self.counters.evicted_by_kind[kind] = self.counters.evicted_by_kind.get(kind, 0) + 1
            # The owning controller replaces the pod: a new pending pod with the same spec.
            if p.spec.duration is None or p.spec.kind is not PodKind.SERVICE or p.spec.arrival + p.spec.duration > t + 60:
                self.counters.requeued += 1
                self._submit(p.index, t)
        self._evict_seen = len(evictions)

    # -- usage -----------------------------------------------------------------------------------------------
    def _usage(self, t: float) -> TickUsage:
        """Running pods, their CPU demand and what contention and quotas let them have (``sim.contention``), their
        memory, and per-node CPU/memory with the system's part (served first, from its own cgroup)."""
        running = list(self._running.values())
        if not running:
            return TickUsage.idle(self._sys_cpu, self._sys_mem)
        count = len(running)
        idx = np.fromiter((p.index for p in running), dtype=np.int64, count=count)
        node = np.fromiter((p.node for p in running), dtype=np.int64, count=count)
        started = np.fromiter((p.started for p in running), dtype=np.float64, count=count)
        demand = self.model.cpu_demand(idx, t)
        served = fair_share(node, np.minimum(demand, self._quota_caps(running)), self._shares[idx], self._pod_room)
        mem = self.model.memory_usage(idx, t - started)
        n = len(self.nodes)
        node_cpu = np.bincount(node, weights=served, minlength=n) + self._sys_cpu
        node_mem = np.bincount(node, weights=mem, minlength=n) + self._sys_mem
        return TickUsage(running, idx, node, demand, served, mem, node_cpu, node_mem)

    def _quota_caps(self, running: Sequence[_Pod]) -> np.ndarray | float:
        """Millicores each running pod's waterline CFS quota allows (inf without one)."""
        if self.waterline is None or not self.waterline.quota.quotas:
            return np.inf
        quotas = self.waterline.quota.quotas
        return np.array(
            [quotas[p.uid][0] * 1000.0 / quotas[p.uid][1] if p.uid in quotas and quotas[p.uid][0] > 0 else np.inf
             for p in running]
        )

    def _account(self, t: float, u: TickUsage, rec: RunRecord) -> None:
        """What the step's contention cost: CPU served against demand per class, services' latency inflation, and
        the finite pods' progress (their end moves out when they ran slower than they wanted)."""
        if not u.running:
            return
        step = self.options.tick_seconds
        kinds = self._kind[u.idx]
        rec.add_cpu(kinds, u.demand, u.served, step)
        service = kinds == KIND_CODES[PodKind.SERVICE]
        if service.any():
            rho = u.node_cpu / self._cap_cpu
            rec.add_inflation(latency_inflation(rho[u.node[service]], u.demand[service], u.served[service]))
        finite = self._finite[u.idx]
        if finite.any():
            which = u.idx[finite]
            self._work_left[which], self._ends[which] = advance_work(
                self._work_left[which], u.demand[finite], u.served[finite], t, step)

    # -- waterline -------------------------------------------------------------------------------------------
    def _pod_state(self, p: _Pod, cpu: float, mem: float, quotas: Mapping[str, tuple[int, int]]) -> PodState:
        """What the agent's cgroup scan sees of a running pod: its usage, its current CFS quota (``quotas``: the
        waterline's, else the limit's) and the fields of the Pod."""
        throttled = quotas.get(p.uid)
        quota = p.default_quota_us if throttled is None else throttled[0]
        start = self.options.start_time + p.started
        seen = p._state
        if seen is not None and seen.start_time == start:  # the same pod: only its usage and quota are new
            refresh_usage(seen, int(cpu), int(mem), quota)  # the engine kept no reference to it: no copy needed
            return seen
        v = p.view
        container = ContainerState(name="main", cpu_usage_milli=int(cpu), cpu_quota_us=quota,
                                   cpu_period_us=CPU_PERIOD_US, requests=v.requests, limits=v.limits)
        p._state = PodState(
            namespace=v.namespace, name=v.name, uid=p.uid, qos_class=v.qos.value, priority=v.priority,
            priority_class=v.priority_class.value, start_time=start,
            cpu_usage_milli=int(cpu), memory_usage_bytes=int(mem), requests=v.requests, limits=v.limits,
            containers=(container,), labels=v.labels, annotations=v.annotations,
            termination_grace_period_seconds=30,
        )
        return p._state

    def _throttled(self) -> int:
        if self.waterline is None:
            return 0
        n = 0
        for uid, (quota, period) in self.waterline.quota.quotas.items():
            p = self._by_uid.get(uid)
            if p is None or quota <= 0:
                continue
            limit = p.view.limits.get("cpu", 0)
            if not limit or quota * 1000 / period < limit:
                n += 1
        return n

    # -- the loop --------------------------------------------------------------------------------------------
    def run(self, progress: Callable[[int], None] | None = None) -> RunRecord:
        # The workload, cluster and engines built so far live for the whole run: move them out of the collector's
        # sight, so full collections (100-200 ms over a large cluster) scan only what the ticks allocate.
        gc.collect()
        gc.freeze()
        # The code a tick runs leaves (next to) no reference cycles - a scheduler session, the one that did, is
        # released when it ends - so what it frees goes at once.  The automatic collector would only walk the
        # surviving young objects over and over (about a sixth of a run's time): it is paused, and one collection per
        # simulated hour (``_COLLECT_SECONDS``) still frees any cycle that does form among the objects made since
        # the last one.
        enabled = gc.isenabled()
        gc.disable()
        try:
            return self._run(progress)
        finally:
            if enabled:
                gc.enable()
            gc.unfreeze()

    def _run(self, progress: Callable[[int], None] | None) -> RunRecord:
        opts = self.options
        rec = RunRecord.empty(self.policy.name, self.workload, opts, opts.ticks)
        wall0, process0 = time.perf_counter(), time.process_time()
        phases = _Phases()
        collect_every = max(1, round(_COLLECT_SECONDS / opts.tick_seconds))
        for k in range(opts.ticks):
            if k and k % collect_every == 0:
                gc.collect()
                gc.freeze()  # what survived lives on: the next collections need not walk it again
            self._tick(k, rec, phases)
            if progress is not None:
                progress(1)
        self._publish_reports()  # the cluster is left as the agents' last reports made it
        rec.phase_seconds = phases.rounded()
        rec.cpu_seconds = time.process_time() - process0
        rec.finish(self.counters, list(self._pending.values()), time.perf_counter() - wall0,
                   (self.agents.reports, self.agents.built) if self.agents is not None else (0, 0),
                   self.waterline.ticks if self.waterline else 0)
        if self.rebalancer is not None:
            rec.rebalance = self.rebalancer.tally.to_json()
        return rec

    def _tick(self, k: int, rec: RunRecord, phases: _Phases) -> None:
        """One step, in the order of the module docstring; each part's CPU time goes to its phase."""
        t = k * self.options.tick_seconds
        now = self.options.start_time + t
        self.clock.set(now)
        with phases("pods"):
            self._finish(t)
            self._arrivals(t)
        with phases("usage"):
            self.model.advance(t)
            usage = self._usage(t)
            self._account(t, usage, rec)
            pods_on = self._pods_by_node(usage)
        with phases("agent-record"):
            self._record_agents(now, usage)
        with phases("agent-report"):
            report_after = self._report_agents(k, now, pods_on)
        with phases("waterline"):
            if self.waterline is not None:
                self._waterline_tick(now, usage.node_cpu, usage.node_mem, pods_on)
                self._collect_evictions(t, by_waterline=True)
        with phases("rebalancer"):
            if self.rebalancer is not None:
                self._publish_reports()
                self.rebalancer.round(t)
                self._collect_evictions(t, by_waterline=False, by_rebalancer=True)
        with phases("agent-report"):
            if self._pending:  # a session runs: it reads every report made so far
                self._publish_reports()
        with phases("scheduler"):
            placed = self._schedule(t)
        with phases("agent-report"):
            self._report_late_agents(now, report_after, pods_on)
        with phases("usage"):
            rec.store_tick(k, usage.node_cpu, usage.node_mem, running=len(self._running), pending=len(self._pending),
                           throttled=self._throttled(), placed=placed)

    def _pods_by_node(self, u: TickUsage) -> list[list[tuple[_Pod, float, float]]]:
        """Per node, its running pods with their CPU and memory: what the node agents and their waterline engines
        see (not built when no agent runs)."""
        pods_on: list[list[tuple[_Pod, float, float]]] = [[] for _ in self.nodes]
        if self.agents is not None:
            for p, c, m in zip(u.running, u.served.tolist(), u.mem.tolist(), strict=True):
                pods_on[p.node].append((p, c, m))
        return pods_on

    def _record_agents(self, now: float, u: TickUsage) -> None:
        """Every node's and running pod's usage into the agents, CPU converted to cores in one NumPy call (the same
        divisions, one per value, as the agent's own conversion)."""
        if self.agents is not None:
            served, node_cpu = np.asarray(u.served, dtype=np.float64), np.asarray(u.node_cpu, dtype=np.float64)
            self.agents.record(now, node_cpu / 1000.0, np.asarray(u.node_mem, dtype=np.float64), u.node,
                               [p.uid for p in u.running], served / 1000.0, np.asarray(u.mem, dtype=np.float64))

    def _report_agents(self, k: int, now: float, pods_on: Sequence[Sequence[tuple[_Pod, float, float]]]) -> list[int]:
        """The agents whose report falls before this step's session report; returns those due after it."""
        if self.agents is None:
            return []
        before, after = self.agents.due(k)
        for i in before:
            self.agents.report(now, i, [p.meta for p, _, _ in pods_on[i]])
        return after

    def _publish_reports(self) -> None:
        if self.agents is not None:
            self.agents.publish()

    def _report_late_agents(self, now: float, nodes: Sequence[int],
                            pods_on: Sequence[Sequence[tuple[_Pod, float, float]]]) -> None:
        """The agents whose report falls after the session: pods that left meanwhile are no longer reported."""
        agents = self.agents
        if agents is None:
            return
        for i in nodes:
            agents.report(now, i, [p.meta for p, _, _ in pods_on[i] if p.key in self._running])

    def _schedule(self, t: float) -> int:
        """One session of the scheduler if any pod is pending; returns the pods it bound."""
        if not self._pending:
            return 0
        wall0, session0 = time.perf_counter(), time.thread_time()
        result = self.scheduler.run_once()
        wall, cpu_time = time.perf_counter() - wall0, time.thread_time() - session0
        placed = self._collect_bindings(t)
        self._collect_evictions(t, by_waterline=False)
        self.counters.sessions.append((wall, cpu_time, placed))
        messages = getattr(result, "pending_messages", {}) or {}
        for key, p in self._pending.items():
            p.message = str(messages.get(key, p.message))
        return placed

    def _waterline_tick(
        self, now: float, node_cpu: np.ndarray, node_mem: np.ndarray, pods_on: Sequence[Sequence[tuple[_Pod, float, float]]]
    ) -> None:
        assert self.waterline is not None
        quotas = self.waterline.quota.quotas
        for i in self.waterline.due(now, node_cpu, node_mem):
            nd = self.nodes[i]
            metrics = self.waterline.node_metrics(nd, float(node_cpu[i]), float(node_mem[i]))
            states = [self._pod_state(p, c, m, quotas) for p, c, m in pods_on[i] if p.key in self._running]
            self.waterline.tick(i, self.waterline.node_state(nd, now, metrics, states, self._node_labels[i]))


def run(
    workload: Workload,
    policy: Policy,
    options: SimOptions,
    *,
    progress: Callable[[int], None] | None = None,
    scheduler_factory: SchedulerFactory = default_scheduler_factory,
) -> RunRecord:
    """Simulate ``workload`` under ``policy``; see the module docstring for what one tick does."""
    try:
        sim = Simulation(workload, policy, options, scheduler_factory=scheduler_factory)
    except NotFound as exc:  # pragma: no cover - a setup bug, not a user error
        raise RuntimeError(f"simulation setup failed: {exc}") from exc
    return sim.run(progress)
