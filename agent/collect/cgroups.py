"""Pod and container usage from cgroupfs: v1 and v2, systemd and cgroupfs drivers, any root.

Where kubelet puts pods (relative to a hierarchy: ``<root>/cpuacct`` etc. on v1, the unified mount on
v2; ``parent`` is kubelet's ``--cgroup-root`` when it is not the top)::

    driver    Guaranteed                         Burstable / BestEffort
    systemd   kubepods.slice/kubepods-pod<u_>.slice   kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<u_>.slice
    cgroupfs  kubepods/pod<uid>                  kubepods/burstable/pod<uid>, kubepods/besteffort/pod<uid>

(``<u_>`` is the UID with ``-`` replaced by ``_``.)  Containers are the pod directory's children:
``<runtime>-<id>.scope`` under systemd (docker, cri-containerd, crio, pouch), ``<id>`` under cgroupfs.

Each tick the QoS tier directories are listed and each pod file is read once: CPU
``cpuacct.usage`` (v1, ns) / ``cpu.stat`` ``usage_usec`` (v2), memory ``memory.stat`` and
``memory.usage_in_bytes`` / ``memory.current`` (pod memory: v1 anon + unevictable, koordlet's
definition; v2 ``memory.current - inactive_file``, Koordinator's; the kubelet-style working set from
both).  Container directories (their CPU counter and the CFS quota and period the waterline throttle
works on) are listed and read only when asked (:meth:`CgroupReader.read_containers`).

Parsing is pure (``parse_*``); :func:`detect_layout`, :func:`scan_pods` and :class:`CgroupReader`
do the I/O.  The reader keeps cgroup files open between ticks (:mod:`agent.collect.files`) unless
an injected ``read`` function replaces that (tests count reads with one).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from agent.collect.files import OpenFiles
from agent.collect.psi import RESOURCES, Pressure, parse_pressure
from common.qos import QoSClass

__all__ = [
    "V1",
    "V2",
    "SYSTEMD",
    "CGROUPFS",
    "CgroupLayout",
    "MemoryStat",
    "PodCgroup",
    "ContainerSample",
    "PodSample",
    "CgroupReader",
    "detect_layout",
    "scan_pods",
    "parse_cpuacct_usage",
    "parse_cpu_stat_usage",
    "parse_memory_stat",
    "parse_int_file",
    "parse_cpu_max",
    "systemd_uid",
]

V1 = "v1"
V2 = "v2"
SYSTEMD = "systemd"
CGROUPFS = "cgroupfs"

_V1_CPUACCT = ("cpuacct", "cpu,cpuacct", "cpuacct,cpu")
_V1_CPU = ("cpu", "cpu,cpuacct", "cpuacct,cpu")
_V1_MEMORY = ("memory",)
_SCOPE = re.compile(r"^(?:docker|cri-containerd|crio|pouch)-([0-9a-zA-Z]+)\.scope$")
_TIER_NAMES = {QoSClass.BURSTABLE: "burstable", QoSClass.BEST_EFFORT: "besteffort"}

ReadFn = Callable[[str], bytes]


def systemd_uid(uid: str) -> str:
    """A pod UID as it appears in a systemd slice name."""
    return uid.replace("-", "_")


@dataclass(frozen=True, slots=True)
class CgroupLayout:
    """Where the hierarchies are and how kubelet names pod cgroups in them."""

    version: str
    driver: str
    root: str
    cpuacct_dir: str
    cpu_dir: str
    memory_dir: str
    parent: str = ""

    def kubepods(self) -> str:
        """The kubepods directory, relative to a hierarchy."""
        name = "kubepods.slice" if self.driver == SYSTEMD else "kubepods"
        return os.path.join(self.parent, name) if self.parent else name

    def tier_dir(self, qos: QoSClass) -> str:
        """The directory holding pods of one QoS class (Guaranteed pods sit in kubepods itself)."""
        base = self.kubepods()
        if qos is QoSClass.GUARANTEED:
            return base
        tier = _TIER_NAMES[qos]
        return os.path.join(base, f"kubepods-{tier}.slice" if self.driver == SYSTEMD else tier)

    def pod_dir(self, uid: str, qos: QoSClass) -> str:
        """The pod's directory, relative to a hierarchy."""
        if self.driver == SYSTEMD:
            prefix = "kubepods" if qos is QoSClass.GUARANTEED else f"kubepods-{_TIER_NAMES[qos]}"
            return os.path.join(self.tier_dir(qos), f"{prefix}-pod{systemd_uid(uid)}.slice")
        return os.path.join(self.tier_dir(qos), f"pod{uid}")

    def pod_from_name(self, qos: QoSClass, name: str) -> str | None:
        """The UID a pod directory's name encodes in a given tier, or ``None`` if it is no pod dir."""
        if self.driver == SYSTEMD:
            prefix = "kubepods-pod" if qos is QoSClass.GUARANTEED else f"kubepods-{_TIER_NAMES[qos]}-pod"
            if name.startswith(prefix) and name.endswith(".slice"):
                return name[len(prefix) : -len(".slice")].replace("_", "-") or None
            return None
        if name.startswith("pod") and len(name) > 3:
            return name[3:]
        return None

    def container_id(self, name: str) -> str | None:
        """The container ID a container directory's name encodes, or ``None``."""
        if self.driver == SYSTEMD:
            m = _SCOPE.match(name)
            return m.group(1) if m else None
        return name

    def path(self, hierarchy: str, rel: str, filename: str) -> str:
        """Absolute path of ``filename`` in directory ``rel`` of hierarchy ``cpuacct|cpu|memory``."""
        base = self.cpuacct_dir if hierarchy == "cpuacct" else self.cpu_dir if hierarchy == "cpu" else self.memory_dir
        return f"{base}/{rel}/{filename}"  # plain concatenation: this runs thousands of times per tick

    def describe(self) -> dict[str, str]:
        return {
            "version": self.version,
            "driver": self.driver,
            "root": self.root,
            "parent": self.parent,
            "cpuacct": self.cpuacct_dir,
            "cpu": self.cpu_dir,
            "memory": self.memory_dir,
            "kubepods": self.kubepods(),
        }


def _first_dir(root: str, names: Iterable[str]) -> str | None:
    for n in names:
        p = os.path.join(root, n)
        if os.path.isdir(p):
            return p
    return None


def _v2_dir(root: str) -> str | None:
    if os.path.exists(os.path.join(root, "cgroup.controllers")):
        return root
    unified = os.path.join(root, "unified")
    if os.path.exists(os.path.join(unified, "cgroup.controllers")):
        return unified
    return None


def _driver_in(hierarchy: str, parent: str) -> str | None:
    base = os.path.join(hierarchy, parent) if parent else hierarchy
    if os.path.isdir(os.path.join(base, "kubepods.slice")):
        return SYSTEMD
    if os.path.isdir(os.path.join(base, "kubepods")):
        return CGROUPFS
    return None


def _auto_version(root: str, parent: str, v1_cpuacct: str | None, v2: str | None) -> str:
    """The hierarchy that holds kubepods wins; else a pure v2 mount means v2, else v1."""
    d1 = _driver_in(v1_cpuacct, parent) if v1_cpuacct else None
    d2 = _driver_in(v2, parent) if v2 else None
    if d1 and not d2:
        return V1
    if d2 and not d1:
        return V2
    if v2 == root or (v2 and not v1_cpuacct):
        return V2
    if v1_cpuacct:
        return V1
    raise FileNotFoundError(f"no cgroup hierarchy under {root} (neither v1 cpuacct nor a v2 mount)")


def _version_dirs(
    root: str, version: str, v1_cpuacct: str | None, v2: str | None
) -> tuple[str, str, str]:
    """(cpuacct, cpu, memory) directories of ``version``; raises when that hierarchy is missing."""
    if version == V1:
        if not v1_cpuacct:
            raise FileNotFoundError(f"cgroup v1: no cpuacct hierarchy under {root}")
        cpu = _first_dir(root, _V1_CPU) or v1_cpuacct
        memory = _first_dir(root, _V1_MEMORY) or os.path.join(root, "memory")
        return v1_cpuacct, cpu, memory
    if version == V2:
        if not v2:
            raise FileNotFoundError(f"cgroup v2: no unified mount at {root} or {root}/unified")
        return v2, v2, v2
    raise ValueError(f"cgroup version {version!r}: expected auto, v1 or v2")


def _pick_driver(driver: str, found: str | None) -> str:
    if driver == "auto":
        return found or SYSTEMD
    if driver not in (SYSTEMD, CGROUPFS):
        raise ValueError(f"cgroup driver {driver!r}: expected auto, systemd or cgroupfs")
    return driver


def detect_layout(root: str = "/sys/fs/cgroup", *, version: str = "auto", driver: str = "auto", parent: str = "") -> CgroupLayout:
    """Probe ``root`` for the cgroup version and kubelet's driver; explicit settings win.

    With both v1 controllers and a unified mount (hybrid hosts) the hierarchy that holds kubepods
    wins; if neither does, a pure v2 mount at ``root`` means v2, otherwise kubelet runs on v1.
    Raises ``FileNotFoundError`` when the requested (or any) hierarchy is missing.
    """
    parent = parent.strip("/")
    v1_cpuacct = _first_dir(root, _V1_CPUACCT)
    v2 = _v2_dir(root)
    if version == "auto":
        version = _auto_version(root, parent, v1_cpuacct, v2)
    cpuacct_dir, cpu_dir, memory_dir = _version_dirs(root, version, v1_cpuacct, v2)
    return CgroupLayout(
        version=version,
        driver=_pick_driver(driver, _driver_in(cpuacct_dir, parent)),
        root=root,
        cpuacct_dir=cpuacct_dir,
        cpu_dir=cpu_dir,
        memory_dir=memory_dir,
        parent=parent,
    )


@dataclass(frozen=True, slots=True)
class PodCgroup:
    uid: str
    qos: QoSClass
    rel: str  # relative to a hierarchy


def _subdirs(path: str) -> list[str]:
    try:
        with os.scandir(path) as it:
            return [e.name for e in it if e.is_dir(follow_symlinks=False)]
    except (FileNotFoundError, NotADirectoryError):
        return []


def scan_pods(layout: CgroupLayout) -> dict[str, PodCgroup]:
    """Every pod cgroup kubelet made, by UID, found by listing the three QoS tier directories."""
    out: dict[str, PodCgroup] = {}
    for qos in (QoSClass.GUARANTEED, QoSClass.BURSTABLE, QoSClass.BEST_EFFORT):
        rel_tier = layout.tier_dir(qos)
        for name in _subdirs(f"{layout.cpuacct_dir}/{rel_tier}"):
            uid = layout.pod_from_name(qos, name)
            if uid is not None:
                out[uid] = PodCgroup(uid=uid, qos=qos, rel=f"{rel_tier}/{name}")
    return out


# -- parsing -------------------------------------------------------------------------------------


def parse_int_file(data: bytes) -> int:
    return int(data.strip())


def parse_cpuacct_usage(data: bytes) -> int:
    """v1 ``cpuacct.usage``: cumulative CPU nanoseconds."""
    return int(data.strip())


def parse_cpu_stat_usage(data: bytes) -> int:
    """v2 ``cpu.stat``: ``usage_usec`` converted to nanoseconds."""
    for line in data.splitlines():
        if line.startswith(b"usage_usec "):
            return int(line.split()[1]) * 1000
    raise ValueError("cpu.stat: no usage_usec")


def parse_cpu_max(data: bytes) -> tuple[int, int]:
    """v2 ``cpu.max`` (``"max 100000"`` or ``"50000 100000"``) as (quota µs or -1, period µs)."""
    parts = data.split()
    if not parts:
        raise ValueError("cpu.max: empty")
    quota = -1 if parts[0] == b"max" else int(parts[0])
    period = int(parts[1]) if len(parts) > 1 else 100_000
    return quota, period


_MEM_KEYS = {  # the five keys the agent needs; v1's hierarchical totals carry a total_ prefix
    V1: re.compile(rb"^total_(inactive_anon|active_anon|unevictable|inactive_file|active_file) (\d+)$", re.M),
    V2: re.compile(rb"^(inactive_anon|active_anon|unevictable|inactive_file|active_file) (\d+)$", re.M),
}


@dataclass(frozen=True, slots=True)
class MemoryStat:
    """The parts of ``memory.stat`` the agent uses, in bytes (v1 hierarchical ``total_*`` keys).

    Pod memory without page cache: on v1 anon + unevictable (koordlet's definition); on v2, where
    ``current`` (``memory.current``) is known, ``current - inactive_file`` (Koordinator's v2 definition).
    """

    anon: int  # inactive_anon + active_anon + unevictable
    file: int  # active_file + inactive_file: the page cache
    inactive_file: int
    current: int | None = None  # v2 memory.current

    @property
    def usage_without_page_cache(self) -> int:
        if self.current is not None:
            return max(0, self.current - self.inactive_file)
        return self.anon

    @property
    def usage_with_page_cache(self) -> int:
        if self.current is not None:
            return self.current
        return self.anon + self.file


def parse_memory_stat(data: bytes, version: str, current: int | None = None) -> MemoryStat:
    """The five keys the agent needs, found in one regex pass (v1: the hierarchical ``total_*`` keys)."""
    values = {k: int(v) for k, v in _MEM_KEYS[version].findall(data)}
    if version == V1 and not values:  # a kernel without hierarchical accounting: the cgroup's own keys
        values = {k: int(v) for k, v in _MEM_KEYS[V2].findall(data)}
    inactive_file = values.get(b"inactive_file", 0)
    return MemoryStat(
        anon=values.get(b"inactive_anon", 0) + values.get(b"active_anon", 0) + values.get(b"unevictable", 0),
        file=values.get(b"active_file", 0) + inactive_file,
        inactive_file=inactive_file,
        current=current if version == V2 else None,
    )


# -- reading -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ContainerSample:
    id: str
    rel: str
    cpu_ns: int | None
    cpu_quota_us: int  # -1 = unlimited
    cpu_period_us: int


@dataclass(frozen=True, slots=True)
class PodSample:
    uid: str
    qos: QoSClass
    rel: str
    cpu_ns: int | None
    memory: MemoryStat | None
    memory_usage_bytes: int | None
    containers: tuple[ContainerSample, ...] = ()
    missing: tuple[str, ...] = ()  # files absent from a cgroup that still exists: collection errors
    pressure: Mapping[str, Pressure] | None = None  # v2 only: {cpu,memory,io}.pressure

    @property
    def working_set_bytes(self) -> int | None:
        """kubelet's working set: usage minus inactive page cache, never negative."""
        if self.memory_usage_bytes is None or self.memory is None:
            return None
        return max(0, self.memory_usage_bytes - self.memory.inactive_file)


class CgroupReader:
    """Reads one pod's files for a tick.

    A file whose cgroup vanished mid-tick gives ``None`` (the pod is going away); a file missing from
    a cgroup that still exists is named in ``PodSample.missing`` so the collector counts an error.
    By default files are kept open between ticks (:class:`OpenFiles`); ``read`` replaces that.
    """

    def __init__(
        self, layout: CgroupLayout, *, read: ReadFn | None = None, containers: bool = True, pressure: bool = False
    ) -> None:
        self.layout = layout
        self.pressure = False
        self.set_pressure(pressure)
        self._files: OpenFiles | None = None
        if read is None:
            self._files = OpenFiles()
            read = self._files.read
        self._read = read
        self.containers = containers
        v1 = layout.version == V1
        self._cpu_file = ("cpuacct", "cpuacct.usage") if v1 else ("cpuacct", "cpu.stat")
        self._mem_usage_file = "memory.usage_in_bytes" if v1 else "memory.current"
        self._missing: list[str] = []

    def set_pressure(self, on: bool) -> None:
        """Read each pod's ``<resource>.pressure`` from now on (cgroup v1 has no per-cgroup PSI)."""
        self.pressure = on and self.layout.version == V2

    def _try(self, path: str) -> bytes | None:
        try:
            return self._read(path)
        except (FileNotFoundError, NotADirectoryError, ProcessLookupError):
            if os.path.isdir(os.path.dirname(path)):
                self._missing.append(path)
            return None
        except OSError as exc:
            if exc.errno in (19, 22):  # ENODEV / EINVAL: cgroup being removed
                return None
            raise

    def cpu_ns(self, rel: str) -> int | None:
        data = self._try(self.layout.path(self._cpu_file[0], rel, self._cpu_file[1]))
        if data is None:
            return None
        return parse_cpuacct_usage(data) if self.layout.version == V1 else parse_cpu_stat_usage(data)

    def cpu_quota(self, rel: str) -> tuple[int, int]:
        """(quota µs or -1, period µs) of a cgroup; unlimited when the files are missing."""
        if self.layout.version == V1:
            q = self._try(self.layout.path("cpu", rel, "cpu.cfs_quota_us"))
            p = self._try(self.layout.path("cpu", rel, "cpu.cfs_period_us"))
            quota = parse_int_file(q) if q is not None else -1
            return (quota if quota > 0 else -1), (parse_int_file(p) if p is not None else 100_000)
        data = self._try(self.layout.path("cpu", rel, "cpu.max"))
        return parse_cpu_max(data) if data is not None else (-1, 100_000)

    def read_containers(self, pod_rel: str) -> tuple[ContainerSample, ...]:
        """Every container directory of a pod: its CPU counter and CFS quota (the throttle's inputs)."""
        containers: list[ContainerSample] = []
        for name in sorted(_subdirs(f"{self.layout.cpuacct_dir}/{pod_rel}")):
            cid = self.layout.container_id(name)
            if cid is None:
                continue
            rel = f"{pod_rel}/{name}"
            quota, period = self.cpu_quota(rel)
            containers.append(ContainerSample(cid, rel, self.cpu_ns(rel), quota, period))
        return tuple(containers)

    def _memory(self, rel: str) -> tuple[MemoryStat | None, int | None]:
        stat_raw = self._try(self.layout.path("memory", rel, "memory.stat"))
        usage_raw = self._try(self.layout.path("memory", rel, self._mem_usage_file))
        usage = parse_int_file(usage_raw) if usage_raw is not None else None
        if stat_raw is None or (self.layout.version == V2 and usage is None):
            return None, usage
        return parse_memory_stat(stat_raw, self.layout.version, usage), usage

    def read_pressure(self, rel: str) -> dict[str, Pressure]:
        """A v2 cgroup's ``{cpu,memory,io}.pressure``; a missing file is left out (and counted)."""
        out: dict[str, Pressure] = {}
        for resource in RESOURCES:
            path = self.layout.path("cpu", rel, f"{resource}.pressure")
            data = self._try(path)
            if data is not None:
                out[resource] = parse_pressure(data, path)
        return out

    def read_pod(self, pod: PodCgroup, *, containers: bool | None = None) -> PodSample:
        """One pod's counters; its containers too when ``containers`` (default: as constructed)."""
        self._missing = []
        memory, usage = self._memory(pod.rel)
        with_containers = self.containers if containers is None else containers
        return PodSample(
            uid=pod.uid,
            qos=pod.qos,
            rel=pod.rel,
            cpu_ns=self.cpu_ns(pod.rel),
            memory=memory,
            memory_usage_bytes=usage,
            containers=self.read_containers(pod.rel) if with_containers else (),
            pressure=self.read_pressure(pod.rel) if self.pressure else None,
            missing=tuple(self._missing),
        )

    def forget_except(self, pod_rels: set[str]) -> int:
        """Close kept files of pods not in ``pod_rels`` (their cgroups are gone); returns how many."""
        if self._files is None:
            return 0
        bases = (self.layout.cpuacct_dir, self.layout.cpu_dir, self.layout.memory_dir)

        def live(path: str) -> bool:
            for base in bases:
                if path.startswith(base + "/"):
                    d = path[len(base) + 1 :].rsplit("/", 1)[0]
                    return d in pod_rels or d.rsplit("/", 1)[0] in pod_rels
            return False

        return self._files.retain(live)
