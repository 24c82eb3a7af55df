"""predicates: Volcano's wrapper of kube-scheduler filters (docs/design/scheduler.md §4.7).

Per node, in Volcano's order:
1. pod count — Unschedulable "node(s) pod number exceeded" when ``allocatable.pods ≤`` the pods already there
   (pipelined ones included, as Volcano's node infos hold them); reported but does not stop the checks;
2. the stable filters, each stopping the checks on failure (UnschedulableAndUnresolvable): NodeUnschedulable
   ("node(s) were unschedulable", unless the pod tolerates the ``node.kubernetes.io/unschedulable`` taint),
   NodeAffinity (nodeSelector + required node affinity), TaintToleration (NoSchedule/NoExecute);
3. NodePorts ("node(s) didn't have free ports for the requested pod ports"), InterPodAffinity and
   PodTopologySpread (the pod's DoNotSchedule constraints; the system defaults are ScheduleAnyway and only score),
   each reported and stopping the checks unless it is plain Unschedulable.

Arguments (lenient, default true): ``predicate.NodeAffinityEnable``, ``predicate.NodePortsEnable``,
``predicate.TaintTolerationEnable``, ``predicate.PodAffinityEnable``, ``predicate.PodTopologySpreadEnable``.
Volcano's volume, DRA and equivalence-cache switches (``predicate.NodeVolumeLimitsEnable``,
``predicate.VolumeZoneEnable``, ``predicate.VolumeBindingEnable``, ``predicate.DynamicResourceAllocationEnable``,
``predicate.CacheEnable``) are accepted so Volcano confs load; the session models no volumes or devices, so they
change nothing.  Resource fit is not checked here: the actions (and ``noderesources``) do it.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence

import numpy as np
import numpy.typing as npt

from common.objects import NodeView, PodView
from common.resources import PODS
from scheduler.framework.api import TaskInfo
from scheduler.framework.arrays import carried_changes
from scheduler.framework.plugin import Arguments, register_plugin
from scheduler.framework.runs import RowFn
from scheduler.framework.session import Session
from scheduler.framework.status import Code, FilterResult
from scheduler.predicates.affinity import AFFINITY_REASON
from scheduler.predicates.taints import UNTOLERATED_REASON, tolerates

from .interpodaffinity import InterPodAffinityCheck, names_terms
from .nodeaffinity import AffinityCheck
from .podtopologyspread import SYSTEM_DEFAULT_CONSTRAINTS, PodIndex, SpreadCheck, port_number
from .tainttoleration import TaintCheck

__all__ = ["NAME", "UNSCHEDULABLE_REASON", "POD_NUMBER_REASON", "PORTS_REASON", "Predicates", "host_ports",
           "ports_conflict"]

NAME = "predicates"
UNSCHEDULABLE_REASON = "node(s) were unschedulable"
POD_NUMBER_REASON = "node(s) pod number exceeded"
PORTS_REASON = "node(s) didn't have free ports for the requested pod ports"
# up to this many nodes, a run's rows read each node's values; past it, one gather per array
_ROW_BY_ROW = 4
UNSCHEDULABLE_TAINT = ("node.kubernetes.io/unschedulable", "", "NoSchedule")
ENABLE_KEYS = ("predicate.NodeAffinityEnable", "predicate.NodePortsEnable", "predicate.TaintTolerationEnable",
               "predicate.PodAffinityEnable", "predicate.PodTopologySpreadEnable")
ACCEPTED_KEYS = ("predicate.NodeVolumeLimitsEnable", "predicate.VolumeZoneEnable", "predicate.VolumeBindingEnable",
                 "predicate.DynamicResourceAllocationEnable", "predicate.CacheEnable")
# the argument keys this plugin reads (a nested key as parent/child); tests hold the code and docs to it
ARGUMENTS: tuple[str, ...] = (*ENABLE_KEYS, *ACCEPTED_KEYS)
BoolArray = npt.NDArray[np.bool_]
IntArray = npt.NDArray[np.int64]
HostPort = tuple[str, str, int]  # host IP, protocol, port
ANY_IP = "0.0.0.0"


def host_ports(pod: PodView) -> list[HostPort]:
    """The host ports the pod's containers ask for (IP defaults to 0.0.0.0, protocol to TCP)."""
    out = []
    for c in (pod.raw.get("spec") or {}).get("containers") or []:
        for p in c.get("ports") or []:
            port = port_number(p.get("hostPort"))
            if port > 0:
                out.append((str(p.get("hostIP") or ANY_IP), str(p.get("protocol") or "TCP"), port))
    return out


def ports_conflict(wanted: Iterable[HostPort], used: Iterable[HostPort]) -> bool:
    """kube's HostPortInfo conflict: same protocol and port, and the same IP or either side on 0.0.0.0."""
    taken = set(used)
    by_port = {(proto, port) for _, proto, port in taken}
    for ip, proto, port in wanted:
        if ip == ANY_IP:
            if (proto, port) in by_port:
                return True
        elif (ip, proto, port) in taken or (ANY_IP, proto, port) in taken:
            return True
    return False


class _Collector:
    """Per-node reasons in check order; a node stops collecting after a status that aborts (not Unschedulable).
    Only the failing masks are kept as the checks run: a node's reasons are made when asked for (the message of
    a pod that fails, ``explain``), not for every failing node of every pod."""

    def __init__(self, everywhere: FilterResult) -> None:
        """``everywhere``: the answer when no node fails (shared, read-only)."""
        self.steps: list[tuple[BoolArray, FilterResult | tuple[Code, str]]] = []
        self.everywhere = everywhere
        self.failed: BoolArray | None = None   # made with the first failing node

    def add(self, failing: BoolArray, result: FilterResult | tuple[Code, str]) -> None:
        if not np.count_nonzero(failing):   # cheaper than failing.any() on a node-length mask
            return
        self.steps.append((failing, result))
        self.failed = failing.copy() if self.failed is None else np.logical_or(self.failed, failing, out=self.failed)

    def add_passing(self, passing: BoolArray, result: FilterResult | tuple[Code, str]) -> None:
        """:meth:`add` of the nodes ``passing`` leaves out; nothing to invert when every node passes."""
        if np.count_nonzero(passing) != len(passing):
            self.add(~passing, result)

    def reasons(self, i: int) -> list[tuple[Code, str]]:
        out: list[tuple[Code, str]] = []
        for failing, result in self.steps:
            if not failing[i]:
                continue
            found = [result] if isinstance(result, tuple) else result.found(i)
            out.extend(found)
            if any(code is not Code.UNSCHEDULABLE for code, _ in found):
                break
        return out

    def result(self) -> FilterResult:
        if self.failed is None:
            return self.everywhere
        return FilterResult(~self.failed, lazy=self.reasons)


class _KeptPasses:
    """Whether a kept answer passes every node, counted once per answer for the session: the node affinity and
    toleration answers are read-only masks shared by every pod alike (a writable mask is counted each time)."""

    def __init__(self) -> None:
        self._seen: dict[int, tuple[BoolArray, bool]] = {}

    def everywhere(self, mask: BoolArray) -> bool:
        if mask.flags.writeable:
            return int(np.count_nonzero(mask)) == len(mask)
        hit = self._seen.get(id(mask))
        if hit is None:   # the mask is held with its answer: no other object takes its id while it is kept here
            hit = self._seen[id(mask)] = (mask, int(np.count_nonzero(mask)) == len(mask))
        return hit[1]


def _cordoned(views: Sequence[NodeView]) -> BoolArray:
    """Which nodes are cordoned (read-only: sessions share it while their node views are the same objects)."""
    out = np.array([v.unschedulable for v in views], dtype=np.bool_)
    out.flags.writeable = False
    return out


def _no_hard_spread(spread: SpreadCheck, task: TaskInfo) -> bool:
    """Whether the pod's spread constraints (or the defaults) have none that filters."""
    try:
        cons, _ = spread.constraints(task)
    except (ValueError, TypeError):
        return False
    return not any(c.spec.hard for c in cons)


class Predicates:
    name = NAME

    def __init__(self, args: Arguments) -> None:
        for key in (*ENABLE_KEYS, *ACCEPTED_KEYS):
            v = args.get(key)
            if v is not None and not isinstance(v, bool | str):
                raise ValueError(f"{NAME} argument {key}: must be true or false, got {v!r}")
        self.node_affinity = args.get_bool("predicate.NodeAffinityEnable", True)
        self.node_ports = args.get_bool("predicate.NodePortsEnable", True)
        self.taints = args.get_bool("predicate.TaintTolerationEnable", True)
        self.pod_affinity = args.get_bool("predicate.PodAffinityEnable", True)
        self.spread = args.get_bool("predicate.PodTopologySpreadEnable", True)

    def on_session_open(self, ssn: Session) -> None:
        n = len(ssn.nodes)
        index = PodIndex.of(ssn)
        arr = ssn.arrays
        max_pods = arr.allocatable[:, arr.col[PODS]] if PODS in arr.col else np.zeros(n, dtype=np.int64)
        views = ssn.node_views()
        cordoned: BoolArray = ssn.memo.for_objects("predicates.cordoned", views, lambda: _cordoned(views))
        any_cordoned = bool(cordoned.any())
        affinity = AffinityCheck(ssn) if self.node_affinity else None
        taints = TaintCheck(ssn) if self.taints else None
        spread = SpreadCheck(ssn, SYSTEM_DEFAULT_CONSTRAINTS, True, affinity, taints) if self.spread else None
        pod_affinity = InterPodAffinityCheck(ssn, spread=spread) if self.pod_affinity else None
        kept = _KeptPasses()
        everywhere = FilterResult(np.ones(n, dtype=np.bool_))
        everywhere.passed.flags.writeable = False

        def predicate(task: TaskInfo) -> FilterResult:
            pod = task.pod
            out = _Collector(everywhere)
            out.add(max_pods <= index.pod_count, (Code.UNSCHEDULABLE, POD_NUMBER_REASON))
            if any_cordoned and not any(tolerates(t, UNSCHEDULABLE_TAINT) for t in pod.tolerations):
                out.add(cordoned, (Code.UNRESOLVABLE, UNSCHEDULABLE_REASON))
            if affinity is not None:
                required = affinity.required(pod)
                if not kept.everywhere(required):
                    out.add(~required, (Code.UNRESOLVABLE, AFFINITY_REASON))
            if taints is not None:
                tolerated = taints.passes(task)
                if not kept.everywhere(tolerated):
                    out.add(~tolerated, (Code.UNRESOLVABLE, UNTOLERATED_REASON))
            if self.node_ports:
                wanted = host_ports(pod)
                if wanted and index.with_host_ports:
                    used: dict[int, list[HostPort]] = {}
                    for placed in index.with_host_ports.values():
                        used.setdefault(placed.node, []).extend(host_ports(placed.pod))
                    clash = np.zeros(n, dtype=np.bool_)
                    for i, ports in used.items():
                        clash[i] = ports_conflict(wanted, ports)
                    out.add(clash, (Code.UNSCHEDULABLE, PORTS_REASON))
            # the filters' shared all-pass answer (no term or hard constraint keeps the pod from any node) adds nothing
            if pod_affinity is not None:
                res = pod_affinity.filter(task)
                if res is not pod_affinity.everywhere:
                    out.add_passing(res.passed, res)
            if spread is not None:
                res = spread.filter(task)
                if res is not spread.everywhere:
                    out.add_passing(res.passed, res)
            return out.result()

        def rows_of(task: TaskInfo) -> RowFn | None:
            """Past the pod count, what passes for a pod without host ports, required (anti-)affinity terms or
            spread constraints does not change while only pods like it are placed: computed once for the run."""
            pod = task.pod
            if self.node_ports and host_ports(pod):
                return None
            static = np.ones(n, dtype=np.bool_)
            if pod_affinity is not None:
                terms = pod_affinity.terms_of(task.uid, pod)
                if terms is None or terms.required_affinity or terms.required_anti:
                    return None
                static &= pod_affinity.filter(task).passed   # the anti-affinity of pods already placed
            if spread is not None and not _no_hard_spread(spread, task):
                return None
            if any_cordoned and not any(tolerates(t, UNSCHEDULABLE_TAINT) for t in pod.tolerations):
                static &= ~cordoned
            if affinity is not None:
                static &= affinity.required(pod)
            if taints is not None:
                static &= taints.passes(task)

            def rows(at: list[int]) -> list[bool]:
                count = index.pod_count
                if len(at) > _ROW_BY_ROW:   # a gather per array costs less than reading each node's values
                    idx = np.array(at, dtype=np.intp)
                    out: list[bool] = (static[idx] & (max_pods[idx] > count[idx])).tolist()
                    return out
                return [bool(static[i]) and int(max_pods[i]) > int(count[i]) for i in at]
            return rows

        # the labels the rows read: the placed pods' (anti-)affinity terms select by them, and hard default spread
        # constraints apply to labelled pods
        hard_defaults = spread is not None and any(c.get("whenUnsatisfiable", "DoNotSchedule") == "DoNotSchedule"
                                                   for c in spread.defaults)

        def rows_key(task: TaskInfo) -> Hashable:
            reads = hard_defaults or (pod_affinity is not None and bool(index.with_affinity))
            return tuple(sorted(task.pod.labels.items())) if reads else ()

        # since the previous session, besides the node accounting and views: the pod counts that moved; any node's
        # rows while placed pods have (anti-)affinity terms (which reach over their domains), or had
        terms = bool(index.with_affinity)
        counts = carried_changes(ssn.memo, NAME, terms, [index.pod_count], renewing=ssn.renewing)

        def rows_since(views_moved: bool) -> IntArray | None:
            return None if terms else counts

        # placing a pod moves its node's count; one with pod (anti-)affinity terms changes what the placed pods'
        # terms exclude, anywhere in their domains
        ssn.add_vector_predicate_fn(NAME, predicate, rows=rows_of, rows_key=rows_key,
                                    rows_moved=lambda task: names_terms(task.pod), rows_since=rows_since)

    def on_session_close(self, ssn: Session) -> None:
        return None


@register_plugin(NAME)
def _build(args: Arguments) -> Predicates:
    return Predicates(args)
