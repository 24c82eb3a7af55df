"""Thin adapters that carry out the planner's decisions: cgroup CPU quota writes, evictions, the node taint.

Each returns an :class:`ActResult` instead of raising, so one failed write or a PDB refusal is recorded and
the tick goes on (crane aborts the whole tick on the first error; docs/design/waterline.md §6).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from agent.qos.records import ActResult, Outcome
from agent.qos.state import ContainerState, PodState
from common.clock import Clock, to_rfc3339
from common.cluster import ApiError, Cluster, Conflict, NotFound, TooManyRequests

__all__ = [
    "TAINT_KEY",
    "TAINT_EFFECT",
    "CONDITION_TYPE",
    "QuotaWriter",
    "Evictor",
    "SchedulingSwitch",
    "CgroupQuotaWriter",
    "ClusterEvictor",
    "NodeScheduling",
    "Actuation",
    "RecordingActuators",
    "write_cpu_quota",
    "read_cpu_quota",
]

log = logging.getLogger(__name__)

TAINT_KEY = "qos.loadwise.io/interference"
TAINT_EFFECT = "PreferNoSchedule"
CONDITION_TYPE = "interference-identified"
TAINT_RETRIES = 5  # reads and writes of the taint list before a conflicting writer wins this tick


class QuotaWriter(Protocol):
    def set_cpu_quota(self, pod: PodState, container: ContainerState, quota_us: int, period_us: int) -> ActResult: ...


class Evictor(Protocol):
    def evict(self, pod: PodState, grace_period_seconds: int) -> ActResult: ...


class SchedulingSwitch(Protocol):
    def set_scheduling(self, enabled: bool, message: str) -> ActResult: ...


# -- cgroups ------------------------------------------------------------------------------------------------


def read_cpu_quota(cgroup_dir: str | Path) -> tuple[int, int]:
    """(quota µs, period µs) of a cgroup, -1 for unlimited; v2 ``cpu.max`` or v1 ``cpu.cfs_*``."""
    d = Path(cgroup_dir)
    if (d / "cpu.max").exists():
        quota, _, period = (d / "cpu.max").read_text().strip().partition(" ")
        return (-1 if quota == "max" else int(quota)), int(period or 100_000)
    return int((d / "cpu.cfs_quota_us").read_text().strip()), int((d / "cpu.cfs_period_us").read_text().strip())


def write_cpu_quota(cgroup_dir: str | Path, quota_us: int, period_us: int) -> None:
    """Write one quota; -1 lifts it.  v2 takes "quota period" in one write, v1 needs the period first
    when it changes (the kernel validates quota against the current period)."""
    d = Path(cgroup_dir)
    if (d / "cpu.max").exists():
        (d / "cpu.max").write_text(f"{'max' if quota_us < 0 else quota_us} {period_us}\n")
        return
    quota_file = d / "cpu.cfs_quota_us"
    if not quota_file.exists():
        raise FileNotFoundError(f"{d}: neither cpu.max nor cpu.cfs_quota_us")
    period_file = d / "cpu.cfs_period_us"
    if int(period_file.read_text().strip()) != period_us:
        period_file.write_text(f"{period_us}\n")
    quota_file.write_text(f"{-1 if quota_us < 0 else quota_us}\n")


@dataclass
class CgroupQuotaWriter:
    """Writes a container's CFS quota; relative cgroup paths are resolved under ``root``."""

    root: Path = Path("/sys/fs/cgroup/cpu")
    writes: list[tuple[str, int, int]] = field(default_factory=list)

    def set_cpu_quota(self, pod: PodState, container: ContainerState, quota_us: int, period_us: int) -> ActResult:
        if not container.cgroup_dir:
            return ActResult(Outcome.FAILED, f"no cgroup path known for {pod.key}/{container.name}")
        path = Path(container.cgroup_dir)
        if not path.is_absolute():
            path = self.root / path
        try:
            write_cpu_quota(path, quota_us, period_us)
        except FileNotFoundError as exc:
            return ActResult(Outcome.GONE, str(exc))
        except (OSError, ValueError) as exc:
            return ActResult(Outcome.FAILED, f"{path}: {getattr(exc, 'strerror', None) or exc}")
        self.writes.append((str(path), quota_us, period_us))
        log.debug("cpu quota of %s/%s set to %d/%d (%s)", pod.key, container.name, quota_us, period_us, path)
        return ActResult(Outcome.ACCEPTED)


# -- eviction ---------------------------------------------------------------------------------------------


@dataclass
class ClusterEvictor:
    """``pods/eviction`` through the cluster; a PDB's 429 is a refusal, not an error of the engine."""

    cluster: Cluster

    def evict(self, pod: PodState, grace_period_seconds: int) -> ActResult:
        try:
            self.cluster.evict(pod.namespace, pod.name, grace_period_seconds=grace_period_seconds)
        except TooManyRequests as exc:
            return ActResult(Outcome.REFUSED, str(exc))
        except NotFound as exc:
            return ActResult(Outcome.GONE, str(exc))
        except ApiError as exc:
            return ActResult(Outcome.FAILED, f"{exc.status} {exc}")
        log.warning("evicted pod %s (grace %ds)", pod.key, grace_period_seconds)
        return ActResult(Outcome.ACCEPTED)


# -- node scheduling --------------------------------------------------------------------------------------


@dataclass
class NodeScheduling:
    """The soft taint and the node condition that tell schedulers to prefer other nodes."""

    cluster: Cluster
    node: str
    clock: Clock

    def set_scheduling(self, enabled: bool, message: str) -> ActResult:
        try:
            obj = self._set_taint(present=not enabled)
            conditions = [c for c in (obj.get("status") or {}).get("conditions") or [] if isinstance(c, Mapping)]
            now = to_rfc3339(self.clock.now())
            status = "False" if enabled else "True"
            old = next((c for c in conditions if c.get("type") == CONDITION_TYPE), None)
            if old is not None and old.get("status") == status:
                return ActResult(Outcome.ACCEPTED)
            cond = {"type": CONDITION_TYPE, "status": status, "lastHeartbeatTime": now, "lastTransitionTime": now,
                    "reason": "InterferenceCleared" if enabled else "WaterlineExceeded", "message": message}
            # merged by type: the kubelet's Ready, MemoryPressure ... are written concurrently and stay its own
            self.cluster.patch_conditions("Node", self.node, [cond])
        except NotFound as exc:
            return ActResult(Outcome.GONE, str(exc))
        except ApiError as exc:
            return ActResult(Outcome.FAILED, f"{exc.status} {exc}")
        return ActResult(Outcome.ACCEPTED)


    def _set_taint(self, *, present: bool) -> Mapping[str, Any]:
        """Add or remove this engine's taint, leaving every other taint as it is; returns the node.

        ``spec.taints`` has no merge key, so a patch writes the whole list: it carries the
        resourceVersion the list was read at, and a 409 (another controller changed the node in
        between) reads the node again and retries, up to ``TAINT_RETRIES`` times.
        """
        conflicts = 0
        while True:
            obj = self.cluster.get("Node", self.node)
            taints = [dict(t) for t in (obj.get("spec") or {}).get("taints") or [] if isinstance(t, Mapping)]
            mine = [t for t in taints if t.get("key") == TAINT_KEY and t.get("effect") == TAINT_EFFECT]
            if bool(mine) == present:
                return obj
            if present:
                new = [*taints, {"key": TAINT_KEY, "effect": TAINT_EFFECT, "timeAdded": to_rfc3339(self.clock.now())}]
            else:
                new = [t for t in taints if t not in mine]
            rv = (obj.get("metadata") or {}).get("resourceVersion")
            try:
                return self.cluster.patch("Node", self.node, {"metadata": {"resourceVersion": rv}, "spec": {"taints": new}})
            except Conflict:
                conflicts += 1
                if conflicts >= TAINT_RETRIES:
                    raise
                log.debug("node %s changed while its taint was written; retrying", self.node)


# -- bundles ----------------------------------------------------------------------------------------------


@dataclass
class Actuation:
    """The three adapters the runtime drives; it is also the planner's :class:`plan.Actuators`."""

    quota: QuotaWriter
    evictor: Evictor
    scheduling: SchedulingSwitch

    def evict(self, pod: PodState, grace_period_seconds: int) -> ActResult:
        return self.evictor.evict(pod, grace_period_seconds)

    def set_cpu_quota(self, pod: PodState, container: ContainerState, quota_us: int, period_us: int) -> ActResult:
        return self.quota.set_cpu_quota(pod, container, quota_us, period_us)

    def set_scheduling(self, enabled: bool, message: str) -> ActResult:
        return self.scheduling.set_scheduling(enabled, message)


@dataclass
class RecordingActuators:
    """Accepts everything and touches nothing: dry-run, ``qos-plan``, and tests."""

    calls: list[tuple[Any, ...]] = field(default_factory=list)

    def evict(self, pod: PodState, grace_period_seconds: int) -> ActResult:
        self.calls.append(("evict", pod.key, grace_period_seconds))
        return ActResult(Outcome.ACCEPTED, "dry-run")

    def set_cpu_quota(self, pod: PodState, container: ContainerState, quota_us: int, period_us: int) -> ActResult:
        self.calls.append(("quota", pod.key, container.name, quota_us, period_us))
        return ActResult(Outcome.ACCEPTED, "dry-run")

    def set_scheduling(self, enabled: bool, message: str) -> ActResult:
        self.calls.append(("scheduling", enabled))
        return ActResult(Outcome.ACCEPTED, "dry-run")
