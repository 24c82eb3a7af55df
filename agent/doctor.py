"""``loadwise doctor``'s checks: what this node looks like to the agent, and whether the API lets it work.

The checks probe rather than assume (cgroup v1 or v2, systemd or cgroupfs, custom roots, a procfs
that is not the host's), and each returns a :class:`Check` with a verdict and the evidence, so
the same list prints as text or JSON.  :data:`AGENT_API_ACCESS` is the complete table of API
calls the agent makes (collect, report, waterline); the RBAC check asks the API server about each
entry with a SelfSubjectAccessReview, and the deployment's Role can be checked against it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from agent.collect.cgroups import V1, CgroupLayout, CgroupReader, detect_layout, scan_pods
from agent.collect.procfs import ProcfsNodeSource, read_file
from agent.config import AgentConfig
from common.cluster import ApiError, Cluster, ListResult, NotFound
from common.qos import QoSClass

__all__ = ["Check", "ApiAccess", "AGENT_API_ACCESS", "API_REACHABLE", "check_host", "check_api", "check_rbac",
           "cgroup_mounts", "unreachable", "OK", "WARN", "FAIL", "SKIP"]

OK = "ok"
WARN = "warn"
FAIL = "fail"
SKIP = "skip"
API_REACHABLE = "api: reachable"


@dataclass(frozen=True, slots=True)
class Check:
    name: str
    verdict: str  # ok | warn | fail | skip
    detail: str

    def to_json(self) -> dict[str, str]:
        return {"name": self.name, "verdict": self.verdict, "detail": self.detail}


@dataclass(frozen=True, slots=True)
class ApiAccess:
    """One permission the agent needs: verb on group/resource[/subresource], and why."""

    verb: str
    group: str
    resource: str
    subresource: str = ""
    why: str = ""
    enforce_only: bool = False  # used only by waterline actions, which observe mode (dryRun) never takes

    @property
    def label(self) -> str:
        res = f"{self.resource}/{self.subresource}" if self.subresource else self.resource
        return f"{self.verb} {res}.{self.group}" if self.group else f"{self.verb} {res}"


AGENT_API_ACCESS: tuple[ApiAccess, ...] = (
    ApiAccess("list", "", "pods", why="pods on this node (field selector spec.nodeName)"),
    ApiAccess("watch", "", "pods", why="pods on this node"),
    ApiAccess("list", "", "nodes", why="this node's labels and allocatable"),
    ApiAccess("watch", "", "nodes", why="this node's labels and allocatable"),
    ApiAccess("get", "", "nodes", why="waterline: read taints before changing them"),
    ApiAccess("patch", "", "nodes", why="waterline: the interference taint", enforce_only=True),
    ApiAccess("patch", "", "nodes", "status", why="waterline: the interference condition", enforce_only=True),
    ApiAccess("create", "", "pods", "eviction", why="waterline: evictions through the Eviction API", enforce_only=True),
    ApiAccess("get", "slo.loadwise.io", "nodemetrics", why="read the collect policy"),
    ApiAccess("create", "slo.loadwise.io", "nodemetrics", why="create the node's NodeMetric if missing"),
    ApiAccess("patch", "slo.loadwise.io", "nodemetrics", "status", why="report usage"),
    ApiAccess("list", "qos.loadwise.io", "waterlinepolicies", why="waterline policies"),
    ApiAccess("watch", "qos.loadwise.io", "waterlinepolicies", why="waterline policies"),
    ApiAccess("get", "qos.loadwise.io", "waterlinepolicies", why="read a policy before marking its status"),
    ApiAccess("patch", "qos.loadwise.io", "waterlinepolicies", "status", why="mark a rejected policy"),
    ApiAccess("create", "events.k8s.io", "events", why="events about actions and rejected policies"),
    ApiAccess("patch", "events.k8s.io", "events", why="event series counts"),
)


def _proc_check(config: AgentConfig) -> Check:
    src = ProcfsNodeSource(config.proc_root)
    if not src.available():
        return Check("procfs", WARN, f"{config.proc_root}/stat or meminfo not readable: node usage would come from psutil")
    try:
        mem = src.memory()
        src.cpu_cores(0.0)
    except (OSError, ValueError) as exc:
        return Check("procfs", FAIL, f"{config.proc_root}: {exc}")
    return Check("procfs", OK, f"{config.proc_root}: {src.cpu_count()} CPUs, MemTotal {mem.total} bytes")


def _controllers(layout: CgroupLayout) -> str:
    if layout.version == V1:
        present = [d for d in (layout.cpuacct_dir, layout.cpu_dir, layout.memory_dir) if os.path.isdir(d)]
        return "v1 hierarchies: " + ", ".join(present)
    try:
        ctl = read_file(os.path.join(layout.cpuacct_dir, "cgroup.controllers")).decode().split()
    except OSError:
        ctl = []
    return f"v2 at {layout.cpuacct_dir}, controllers: {' '.join(ctl) or '(none)'}"


def cgroup_mounts(mountinfo: str) -> list[tuple[str, str, str]]:
    """``(mount point, filesystem type, controllers)`` of every cgroup and cgroup2 mount in a mountinfo text."""
    out = []
    for line in mountinfo.splitlines():
        left, sep, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if not sep or len(fields) < 5 or len(tail) < 3 or tail[0] not in ("cgroup", "cgroup2"):
            continue
        options = [o for o in tail[2].split(",") if o not in ("rw", "ro")] if tail[0] == "cgroup" else []
        out.append((fields[4], tail[0], ",".join(options)))
    return out


def _mounts_check(config: AgentConfig) -> Check:
    """What is mounted where, as the kernel says (the host's PID 1 under ``procRoot``, else this process)."""
    for path in (os.path.join(config.proc_root, "1", "mountinfo"), "/proc/self/mountinfo"):
        try:
            mounts = cgroup_mounts(read_file(path).decode())
        except OSError:
            continue
        if not mounts:
            return Check("cgroup mounts", WARN, f"{path}: no cgroup or cgroup2 mount")
        v2 = [m for m, kind, _ in mounts if kind == "cgroup2"]
        v1 = [f"{m} ({ctl})" for m, kind, ctl in mounts if kind == "cgroup"]
        parts = ([f"cgroup2 at {', '.join(v2)}"] if v2 else []) + ([f"v1: {', '.join(v1)}"] if v1 else [])
        hybrid = " (hybrid: cgroup2 next to v1)" if v1 and v2 else ""
        return Check("cgroup mounts", OK, f"{'; '.join(parts)}{hybrid}")
    return Check("cgroup mounts", SKIP, f"{config.proc_root}/1/mountinfo and /proc/self/mountinfo not readable")


def _layout_check(config: AgentConfig, layout: CgroupLayout) -> Check:
    """The version and driver, and the evidence for the driver: kubepods found, the config, or a guess."""
    kubepods = os.path.join(layout.cpuacct_dir, layout.kubepods())
    if config.cgroup_driver != "auto":
        how, verdict = f"driver {layout.driver} (set in the config)", OK
    elif os.path.isdir(kubepods):
        how, verdict = f"driver {layout.driver} ({kubepods} found)", OK
    else:
        under = os.path.join(layout.cpuacct_dir, layout.parent) if layout.parent else layout.cpuacct_dir
        how, verdict = (f"driver {layout.driver} assumed: neither kubepods.slice nor kubepods under {under} "
                        "(no pods yet, or set cgroupParent/cgroupDriver)"), WARN
    return Check("cgroup", verdict, f"version {layout.version}, {how}; {_controllers(layout)}")


def check_host(config: AgentConfig) -> tuple[list[Check], CgroupLayout | None]:
    """procfs, the cgroup mounts, cgroup version/driver, kubepods paths, one pod's files."""
    checks = [_proc_check(config), _mounts_check(config)]
    try:
        layout = detect_layout(
            config.cgroup_root, version=config.cgroup_version, driver=config.cgroup_driver, parent=config.cgroup_parent
        )
    except (FileNotFoundError, ValueError) as exc:
        checks.append(Check("cgroup", FAIL, str(exc)))
        return checks, None
    checks.append(_layout_check(config, layout))
    for hierarchy, base in (("cpuacct", layout.cpuacct_dir), ("cpu", layout.cpu_dir), ("memory", layout.memory_dir)):
        path = os.path.join(base, layout.kubepods())
        if os.path.isdir(path):
            checks.append(Check(f"kubepods ({hierarchy})", OK, f"{path} found"))
        else:
            checks.append(Check(f"kubepods ({hierarchy})", WARN, f"{path} missing (no pods here yet, or another driver/root)"))
    pods = scan_pods(layout)
    tiers = {q: sum(1 for p in pods.values() if p.qos is q) for q in QoSClass}
    summary = ", ".join(f"{q.value} {n}" for q, n in tiers.items())
    checks.append(Check("pod cgroups", OK if pods else WARN, f"{len(pods)} found ({summary})"))
    if pods:
        first = sorted(pods.values(), key=lambda p: p.rel)[0]
        sample = CgroupReader(layout).read_pod(first)
        missing = [n for n, v in (("cpu", sample.cpu_ns), ("memory.stat", sample.memory)) if v is None]
        verdict = OK if not missing else WARN
        detail = f"{first.rel}: {len(sample.containers)} containers" + (f"; unreadable: {', '.join(missing)}" if missing else "")
        checks.append(Check("pod cgroup files", verdict, detail))
    return checks, layout


_OBJECT_AT = re.compile(r"<[^>]* object at 0x[0-9a-f]+>: ")


def unreachable(exc: ApiError) -> str:
    """For an API call that never got an answer (the client maps that to a 503 of its own), why, in one line;
    "" for an answer the API server gave."""
    cause = exc.__cause__
    if cause is None or isinstance(cause, ApiError):
        return ""
    reason = getattr(cause, "reason", None) or cause
    text = _OBJECT_AT.sub("", " ".join(str(reason).split()))
    return f"{type(reason).__name__}: {text}" if text else type(reason).__name__


def check_api(cluster: Cluster, node_name: str) -> list[Check]:
    """Reachability and the reads the agent does at start; an unreachable API server is one failed check
    (``api: reachable``), not one invented HTTP status per probe."""
    checks: list[Check] = []
    probes: list[tuple[str, Callable[[], Any]]] = [
        ("api: node", lambda: cluster.get("Node", node_name)),
        ("api: pods on node", lambda: cluster.list("Pod", field_selector=f"spec.nodeName={node_name}")),
        ("api: nodemetric", lambda: cluster.get("NodeMetric", node_name)),
    ]
    for name, probe in probes:
        try:
            result = probe()
        except NotFound as exc:
            if name == "api: nodemetric":
                checks.append(Check(name, OK, f"not found ({exc}); the agent creates it"))
            else:  # a wrong node name: the agent would see no pods
                checks.append(Check(name, FAIL, f"not found ({exc}); is the node name right?"))
            continue
        except ApiError as exc:
            why = unreachable(exc)
            if why:
                return [Check(API_REACHABLE, FAIL, f"cannot reach the API server: {why}")]
            checks.append(Check(name, FAIL, f"HTTP {exc.status} {exc.reason}: {_one_line(str(exc))}"))
            continue
        except Exception as exc:  # noqa: BLE001 - transport errors of any client
            return [Check(API_REACHABLE, FAIL, f"cannot reach the API server: {type(exc).__name__}: "
                                               f"{_one_line(str(exc))}")]
        detail = f"{len(result.items)} pods" if isinstance(result, ListResult) else "readable"
        checks.append(Check(name, OK, detail))
    return [Check(API_REACHABLE, OK, "answers"), *checks]


def _one_line(text: str) -> str:
    return " ".join(text.split())


def check_rbac(review: Callable[[ApiAccess], bool | None], *, enforce: bool = True) -> list[Check]:
    """One check per entry of :data:`AGENT_API_ACCESS`; ``review`` answers allowed / denied / unknown.

    With ``enforce`` false (the agent runs waterlines in dry-run, or not at all: the observe overlay), a denied
    enforce-only permission is what that deployment grants on purpose, so it passes with a note instead of failing.
    """
    out: list[Check] = []
    for access in AGENT_API_ACCESS:
        try:
            allowed = review(access)
        except ApiError as exc:
            why = unreachable(exc) or f"HTTP {exc.status} {exc.reason}: {_one_line(str(exc))}"
            out.append(Check(f"rbac: {access.label}", FAIL, f"review failed: {why}"))
            continue
        if allowed is None:
            out.append(Check(f"rbac: {access.label}", SKIP, "could not be reviewed"))
        elif allowed or not (access.enforce_only and not enforce):
            out.append(Check(f"rbac: {access.label}", OK if allowed else FAIL, access.why))
        else:
            out.append(Check(f"rbac: {access.label}", OK,
                             f"denied, as expected in observe mode (waterline dryRun or disabled); {access.why}"))
    return out


def access_review_body(access: ApiAccess) -> dict[str, Any]:
    """A SelfSubjectAccessReview asking about one entry (cluster-wide)."""
    attrs: dict[str, Any] = {"verb": access.verb, "group": access.group, "resource": access.resource}
    if access.subresource:
        attrs["subresource"] = access.subresource
    return {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SelfSubjectAccessReview",
        "spec": {"resourceAttributes": attrs},
    }
