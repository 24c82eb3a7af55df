"""Binding and eviction against the cluster: pods/binding with retries and backoff, the Eviction API for victims,
and the events kube-scheduler and Volcano emit for both (docs/design/scheduler.md §5.3).

A pod is never bound twice: a Conflict from the API (already bound) is final, and a successful bind is *assumed*
in the cache until the watch confirms it, so the next session already accounts for it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from common.backoff import Backoff
from common.cluster import ApiError, Cluster, Conflict, EventRecord, NotFound, TooManyRequests
from common.objects import PodView
from common.slots import slot_maker
from scheduler.cache import SchedulerCache
from scheduler.framework.api import TaskInfo

__all__ = ["Binder", "EventLimiter", "BindStats"]

log = logging.getLogger(__name__)
COMPONENT = "loadwise-scheduler"


class EventLimiter:
    """At most one event per (object, reason) per ``interval`` seconds unless its message changes."""

    def __init__(self, cluster: Cluster, now: Callable[[], float], interval: float = 60.0) -> None:
        self.cluster = cluster
        self.now = now
        self.interval = interval
        self._last: dict[tuple[str, str, str], tuple[float, str]] = {}
        self.sent = 0
        self.suppressed = 0

    def emit(self, event: EventRecord) -> None:
        key = (event.kind, f"{event.namespace}/{event.name}", event.reason)
        t = self.now()
        prev = self._last.get(key)
        if prev is not None and prev[1] == event.message and t - prev[0] < self.interval:
            self.suppressed += 1
            return
        self._last[key] = (t, event.message)
        try:
            self.cluster.emit_event(event)
            self.sent += 1
        except ApiError as exc:
            log.warning("event %s on %s/%s not recorded: %s", event.reason, event.namespace, event.name, exc)

    def forget(self, kind: str, key: str) -> None:
        for k in [k for k in self._last if k[0] == kind and k[1] == key]:
            del self._last[k]


_make_event = slot_maker(EventRecord)


def _event(kind: str, name: str, namespace: str, reason: str, message: str, type_: str, uid: str, component: str,
           action: str) -> EventRecord:
    """``EventRecord(kind, name, namespace, reason, message, type_, uid, component, action)``, its slots set
    directly instead of through the frozen dataclass's ``object.__setattr__`` per field (an event per bind)."""
    event: EventRecord = _make_event(kind, name, namespace, reason, message, type_, uid, component, action, {})
    return event


@dataclass(slots=True)
class BindStats:
    bound: list[tuple[str, str]] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    evicted: list[str] = field(default_factory=list)
    eviction_refused: dict[str, str] = field(default_factory=dict)


class Binder:
    """The session sink used by the daemon, the simulator and the wire tests."""

    def __init__(self, cluster: Cluster, cache: SchedulerCache, events: EventLimiter, *, retries: int = 3,
                 backoff_seconds: float = 0.2, sleep: Callable[[float], None] = time.sleep) -> None:
        self.cluster = cluster
        self.cache = cache
        self.events = events
        self.retries = retries
        self.backoff = Backoff(backoff_seconds, backoff_seconds * 2 ** max(retries - 1, 0))
        self.sleep = sleep
        self.stats = BindStats()

    def reset(self) -> BindStats:
        stats, self.stats = self.stats, BindStats()
        return stats

    def bind(self, task: TaskInfo, node: str) -> bool:
        pod = task.pod
        reason = ""
        ambiguous = False   # an attempt failed without a verdict: it may have been stored, its answer lost
        for attempt in range(self.retries + 1):
            try:
                self.cluster.bind(pod.namespace, pod.name, node, uid=pod.uid or None)
            except (Conflict, NotFound) as exc:
                reason = str(exc)
                break
            except ApiError as exc:
                reason = str(exc)
                ambiguous = True
                if attempt < self.retries:
                    self.sleep(self.backoff.delay(attempt + 1))
                continue
            return self._bound(pod, node)
        if ambiguous and self._stored(pod, node):
            # our own earlier attempt went through (a retry then says "already assigned"): reporting a failure would
            # let the session hand the node's resources to another pod while this one holds them
            return self._bound(pod, node)
        self.cache.forget(pod.key)
        self.stats.failed[pod.key] = reason
        # the session puts the task back to Pending; the write-back then reports this message once, as
        # PodScheduled=False and a FailedScheduling event (kube's wording)
        task.last_fit_message = f"Binding rejected: {reason}"
        return False

    def _bound(self, pod: PodView, node: str) -> bool:
        key = pod.key
        self.cache.assume(key, node)
        self.stats.bound.append((key, node))
        self.events.emit(_event("Pod", pod.name, pod.namespace, "Scheduled", f"Successfully assigned {key} to {node}",
                                "Normal", pod.uid, COMPONENT, "Binding"))
        return True

    def _stored(self, pod: PodView, node: str) -> bool:
        """Whether the API server holds this very pod (same uid) bound to ``node``."""
        try:
            cur = self.cluster.get("Pod", pod.name, namespace=pod.namespace)
        except ApiError:
            return False
        same = not pod.uid or (cur.get("metadata") or {}).get("uid") == pod.uid
        return same and (cur.get("spec") or {}).get("nodeName") == node

    def evict(self, task: TaskInfo, reason: str) -> bool:
        pod = task.pod
        try:
            self.cluster.evict(pod.namespace, pod.name)
        except TooManyRequests as exc:
            self.stats.eviction_refused[pod.key] = str(exc)
            return False
        except NotFound:
            return True   # already gone: its resources are being released anyway
        except ApiError as exc:
            self.stats.eviction_refused[pod.key] = str(exc)
            return False
        self.stats.evicted.append(pod.key)
        self.events.emit(EventRecord(kind="Pod", name=pod.name, namespace=pod.namespace, uid=pod.uid, reason="Evict",
                                     type="Warning", component=COMPONENT, action="Preempting",
                                     message=f"Pod is evicted, because of {reason}"))
        if task.job and "/" in task.job:
            ns, group = task.job.split("/", 1)
            self.events.emit(EventRecord(kind="PodGroup", name=group, namespace=ns, reason="Evict", type="Normal",
                                         component=COMPONENT, action="Preempting",
                                         message=f"Evict pod {pod.key}, because of {reason}"))
        return True
