"""The scheduler's cache: parsed views of every object it needs, fed by watches, plus *assumed* pods — bound by us
but not yet seen bound — so that no node is over-committed whatever order the watch events arrive in
.  ``snapshot()`` is a consistent copy for one session."""

from __future__ import annotations

import dataclasses
import logging
import math
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from common.clock import Clock
from common.cluster import Cluster, Informer, WatchEvent
from common.objects import NodeMetricView, NodeView, PodGroupView, PodView, PriorityClassView, QueueView
from common.waterline import WaterlinePolicy
from scheduler.framework.changes import ChangeLog
from scheduler.framework.snapshot import WATERLINE_POLICIES_KEY, Snapshot

__all__ = ["SchedulerCache", "WATCHED_KINDS", "ASSUME_TTL_SECONDS"]

log = logging.getLogger(__name__)
T = TypeVar("T")

# A successful binding is assumed until the watch shows it (or shows the pod gone, or a new pod under that name):
# like kube-scheduler (durationToExpireAssumedPod = 0) it never expires by time, because a late watch - informer
# backoff, an API server restart - would otherwise free the node's resources while the pod still holds them.
ASSUME_TTL_SECONDS = math.inf
WATCHED_KINDS = ("Node", "Pod", "NodeMetric", "PodGroup", "Queue", "PriorityClass", "WaterlinePolicy")


def _valid_policy(obj: Mapping[str, Any]) -> dict[str, Any]:
    """The policy object, once it parses: an invalid one is skipped with its field named (a ConfigError is a
    ValueError), as an invalid Pod or Node is, instead of being dropped silently by the plugin."""
    WaterlinePolicy.parse(obj)
    return dict(obj)


_PARSERS: dict[str, Callable[[Mapping[str, Any]], Any]] = {
    "Node": NodeView.parse,
    "Pod": PodView.parse,
    "NodeMetric": NodeMetricView.parse,
    "PodGroup": PodGroupView.parse,
    "Queue": QueueView.parse,
    "PriorityClass": PriorityClassView.parse,
    # checked as the agent checks them (the CRD's schema and more), then kept raw for the loadaware plugin
    "WaterlinePolicy": _valid_policy,
}



@dataclass(frozen=True, slots=True)
class _Assumed:
    node: str
    deadline: float
    uid: str = ""


class SchedulerCache:
    def __init__(self, cluster: Cluster, clock: Clock, *, assume_ttl: float = ASSUME_TTL_SECONDS) -> None:
        self.cluster = cluster
        self.clock = clock
        self.assume_ttl = assume_ttl
        self._lock = threading.RLock()
        self._objects: dict[str, dict[str, Any]] = {k: {} for k in WATCHED_KINDS}
        self._assumed: dict[str, _Assumed] = {}
        self._informers: list[Informer] = []
        self.parse_errors: dict[str, str] = {}
        # counts every change of what a snapshot would hold (watch events, assumed pods coming and going), each
        # noted by kind and key so that a session can follow the changes since the snapshot it was built from
        self.generation = 0
        self.changes = ChangeLog()
        # an assumed pod as snapshots show it (its node set), made once per pod view and node
        self._assumed_views: dict[str, tuple[PodView, str, PodView]] = {}
        # per kind, the changes noted so far, and values derived from its objects at some count (see _derived)
        self._kind_generation = dict.fromkeys(WATCHED_KINDS, 0)
        self._derivations: dict[str, tuple[int, Any]] = {}

    # ---- feeding --------------------------------------------------------------------------------------------------

    def start(self) -> None:
        # shared: the handlers only read the objects they get, and the views keep them as ``raw``, which nothing in
        # the scheduler changes either, so the cluster may hand over the objects it stores instead of copies
        for kind in WATCHED_KINDS:
            inf = self.cluster.informer(kind, self._handler(kind), shared=True)
            self._informers.append(inf)
            inf.start()

    def stop(self) -> None:
        for inf in self._informers:
            inf.stop()
        self._informers = []

    def has_synced(self) -> bool:
        return all(inf.has_synced() for inf in self._informers)

    def _handler(self, kind: str) -> Callable[[WatchEvent], None]:
        parse = _PARSERS[kind]
        objects = self._objects[kind]
        pods = kind == "Pod"

        def handle(event: WatchEvent) -> None:
            if event.type == "BOOKMARK":
                return
            obj = event.object
            # the object's key: "namespace/name", or the name of a cluster-scoped object
            meta = obj.get("metadata") or {}
            ns = meta.get("namespace")
            key = f"{ns}/{meta.get('name', '')}" if ns else str(meta.get("name", ""))
            with self._lock:
                if event.type == "DELETED":
                    self._changed(kind, key, removed=True)
                    objects.pop(key, None)
                    if pods:
                        self._assumed.pop(key, None)
                    return
                try:
                    view = None
                    if pods:
                        old = objects.get(key)
                        # binds and status updates, the common events, keep what the pod's spec parsed to
                        view = old.refreshed(obj) if type(old) is PodView else None
                    if view is None:
                        view = parse(obj)
                except ValueError as exc:
                    # a malformed object is skipped, not fatal; the previous version (if any) is dropped too
                    self._changed(kind, key, removed=True)
                    self.parse_errors[f"{kind} {key}"] = str(exc)
                    objects.pop(key, None)
                    # the views' messages already start with the object ("Pod ns/name: spec...")
                    log.warning("skipping %s %s: %s", kind, key, str(exc).removeprefix(f"{kind} {key}: "))
                    return
                self._changed(kind, key)
                if self.parse_errors:
                    self.parse_errors.pop(f"{kind} {key}", None)
                objects[key] = view
                a = self._assumed.get(key) if pods else None
                if a is not None and (view.node_name or view.terminal or (a.uid and view.uid != a.uid)):
                    del self._assumed[key]   # the watch confirmed the binding (or the pod is gone or recreated)
        return handle

    def _changed(self, kind: str, key: str, removed: bool = False) -> None:
        self.generation += 1
        self._kind_generation[kind] += 1
        self.changes.note(kind, key, removed)

    # ---- assumed pods ---------------------------------------------------------------------------------------------

    def assume(self, pod_key: str, node: str) -> None:
        with self._lock:
            seen = self._objects["Pod"].get(pod_key)
            if not isinstance(seen, PodView) or seen.node_name:
                # the watch already delivered the binding (or the deletion) before the bind call returned:
                # nothing is left to assume, and an entry now would outlive the confirmation it waits for
                return
            self._assumed[pod_key] = _Assumed(node, self.clock.monotonic() + self.assume_ttl, seen.uid)
            self._changed("Pod", pod_key)

    def forget(self, pod_key: str) -> None:
        with self._lock:
            if self._assumed.pop(pod_key, None) is not None:
                self._changed("Pod", pod_key)

    def unchanged_since(self, generation: int) -> bool:
        """Whether a snapshot taken now would hold what one taken at ``generation`` held: no watch event and no
        assumed pod came or went since, and no assumed binding can expire with time."""
        with self._lock:
            return self.generation == generation and all(a.deadline == math.inf for a in self._assumed.values())

    def assumed(self) -> dict[str, str]:
        with self._lock:
            return {k: a.node for k, a in self._assumed.items()}

    def _expire(self) -> None:
        now = self.clock.monotonic()
        for k in [k for k, a in self._assumed.items() if a.deadline <= now]:
            log.info("assumed binding of %s expired without confirmation", k)
            del self._assumed[k]
            self._changed("Pod", k)

    # ---- reading --------------------------------------------------------------------------------------------------

    def pod(self, key: str) -> PodView | None:
        with self._lock:
            view = self._objects["Pod"].get(key)
            return view if isinstance(view, PodView) else None

    def snapshot(self) -> Snapshot:
        with self._lock:
            self._expire()
            pods: dict[str, PodView] = dict(self._objects["Pod"])
            for key, a in self._assumed.items():
                pod = pods.get(key)
                if pod is not None and not pod.node_name:
                    pods[key] = self._assumed_view(key, pod, a.node)
            # what Snapshot.build derives from the nodes and NodeMetrics, kept until one of them changes
            ready = self._derived("Node", lambda: Snapshot.build(self._objects["Node"].values(), ()).nodes)
            metrics = self._derived("NodeMetric", lambda: {m.name: m for m in self._objects["NodeMetric"].values()})
            snap = Snapshot.build(
                (), pods.values(), list(self._objects["PodGroup"].values()), list(self._objects["Queue"].values()),
                list(self._objects["PriorityClass"].values()))
            snap.nodes = list(ready)
            snap.node_metrics = dict(metrics)
            snap.extra[WATERLINE_POLICIES_KEY] = list(self._objects["WaterlinePolicy"].values())
            snap.pod_by_key = pods
            snap.generation = self.generation
            snap.changes = self.changes
            return snap

    def _derived(self, kind: str, derive: Callable[[], T]) -> T:
        """``derive()`` of the objects of ``kind``, made again only after one of them changed."""
        hit = self._derivations.get(kind)
        if hit is not None and hit[0] == self._kind_generation[kind]:
            value: T = hit[1]
            return value
        value = derive()
        self._derivations[kind] = (self._kind_generation[kind], value)
        return value

    def _assumed_view(self, key: str, pod: PodView, node: str) -> PodView:
        """``pod`` as assumed on ``node``: the same object in every snapshot while neither changes, as any other
        pod view is (sessions follow pods by the cache's change log, and a view that changed would be noted)."""
        hit = self._assumed_views.get(key)
        if hit is not None and hit[0] is pod and hit[1] == node:
            return hit[2]
        view = dataclasses.replace(pod, node_name=node)
        self._assumed_views[key] = (pod, node, view)
        if len(self._assumed_views) > 2 * len(self._assumed) + 64:   # drop those of pods no longer assumed
            self._assumed_views = {k: v for k, v in self._assumed_views.items() if k in self._assumed}
        return view
