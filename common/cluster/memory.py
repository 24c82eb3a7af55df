"""An embedded in-process cluster: objects, resourceVersions, watches, binding, eviction with PDBs.

Used by the demo, ``loadwise explain``, the simulator and unit tests.  Informers deliver events
synchronously on the thread that made the change, so a simulation stays deterministic; the
``watch`` iterator also works across threads for code written against the streaming API.
"""

from __future__ import annotations

import builtins
import copy
import itertools
import pickle
import threading
import uuid
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, TypeVar, cast

from common.clock import Clock, SystemClock, parse_rfc3339, to_rfc3339
from common.cluster import (
    Conflict,
    EventRecord,
    Gone,
    Handler,
    Layout,
    ListResult,
    NotFound,
    TooManyRequests,
    WatchEvent,
    layout,
    merge_conditions,
    merge_patch,
    pickle_plain,
)
from common.kinds import kind_info
from common.selectors import LabelSelector, match_field_selector, parse_selector_string
from common.slots import slot_maker

__all__ = ["MemoryCluster"]

_HISTORY = 50_000  # events kept for ``watch``, by default
_NONE: Mapping[Any, Any] = MappingProxyType({})   # what an absent bucket or section reads as (never written)
_T = TypeVar("_T")
_Key = tuple[str, str]  # (namespace or "", name)


@dataclass
class _Sub:
    kind: str
    handler: Handler
    namespace: str | None
    field_selector: str | None
    shared: bool = False  # the handler only reads what it gets: it is given the stored version itself
    active: bool = True
    everything: bool = field(init=False)  # neither a namespace nor a field selector: every object of the kind

    def __post_init__(self) -> None:
        self.everything = not self.namespace and not self.field_selector


@dataclass
class _MemoryInformer:
    cluster: MemoryCluster
    sub: _Sub
    synced: bool = field(default=False)

    def start(self) -> None:
        self.cluster._start_informer(self)

    def stop(self) -> None:
        self.sub.active = False
        self.cluster._remove_sub(self.sub)

    def has_synced(self) -> bool:
        return self.synced


# WatchEvent(type, object) made slot by slot (common.slots): an event per write and informer
_watch_event: Callable[[str, Mapping[str, Any]], WatchEvent] = slot_maker(WatchEvent)


def _object_key(namespaced: bool, name: str, namespace: str | None) -> _Key:
    """An object's key in its kind's bucket: (namespace, name), the namespace "default" when not given, "" for a
    cluster-scoped kind."""
    return ((namespace or "default") if namespaced else "", name)


class MemoryCluster:
    """The in-memory backend of :class:`common.cluster.Cluster`.

    ``graceful_deletion``: evicted pods get a ``deletionTimestamp`` and disappear only when
    :meth:`reap` runs after their grace period; otherwise they are deleted at once.
    ``auto_run``: a bound pod becomes Running and Ready at once (there is no kubelet).
    ``history``: how many events (of all kinds) :meth:`watch` can replay; a watch from an older resourceVersion
    raises :class:`Gone`.  An event keeps its version alive (as a pickle once a copy of it was made, else as the
    stored object, which takes several times the memory), so a large history costs memory.

    Stored objects are never changed in place, only replaced (a new version may share unchanged parts with the
    one it replaces), so a version can be handed as it is to readers that promise not to change it: the
    informers started with ``shared=True``.
    """

    def __init__(
        self,
        *,
        clock: Clock | None = None,
        graceful_deletion: bool = False,
        auto_run: bool = True,
        history: int = _HISTORY,
    ) -> None:
        if history < 1:
            raise ValueError(f"history must be at least 1 event, not {history}")
        self.clock: Clock = clock or SystemClock()
        self.graceful_deletion = graceful_deletion
        self.auto_run = auto_run
        self._lock = threading.RLock()
        self._cond = threading.Condition(self._lock)
        self._objects: dict[str, dict[_Key, dict[str, Any]]] = {}
        self._rv = itertools.count(1)
        self._last_rv = 0
        # (resourceVersion, kind, event type, the version): no object of its own per event
        self._history: deque[tuple[int, str, str, _Copies]] = deque(maxlen=history)
        self._subs: list[_Sub] = []
        # the same subscriptions, in the same order, by kind: a tuple made anew when one comes or goes, so an event
        # walks it without a copy while a handler may stop an informer
        self._subs_by_kind: dict[str, tuple[_Sub, ...]] = {}
        self._waiting = 0  # watch iterators waiting on the condition for new events
        self.events: list[EventRecord] = []
        self.bindings: list[tuple[str, str]] = []  # (ns/name, node), in order
        self.evictions: list[str] = []  # accepted, in order
        self.refused_evictions: list[str] = []
        self._stamp: tuple[int | None, str] = (None, "")   # (a second of the clock, its RFC 3339 text)
        # by kind and key: the status the last write_status given a layout stored, and that status's layout
        self._layouts: dict[tuple[str, _Key], tuple[dict[str, Any], Layout]] = {}

    # -- helpers ------------------------------------------------------------------------------------
    def _bucket(self, kind: str) -> dict[_Key, dict[str, Any]]:
        kind_info(kind)
        return self._objects.setdefault(kind, {})

    @staticmethod
    def _key(kind: str, name: str, namespace: str | None) -> _Key:
        return _object_key(kind_info(kind).namespaced, name, namespace)

    def _next_rv(self) -> str:
        self._last_rv = next(self._rv)
        return str(self._last_rv)

    def _emit(self, kind: str, type_: str, obj: dict[str, Any], copies: _Copies | None = None) -> None:
        """Record the event and deliver it to every matching informer: ``obj`` itself to a shared one, a copy of
        its own to any other.

        The history keeps the version's :class:`_Copies`, from which ``watch`` makes a copy when it delivers the
        event; a version nobody copies is never pickled.
        """
        rv = self._last_rv   # the version's: every write takes its resourceVersion just before it emits
        copies = copies or _Copies(obj)
        self._history.append((rv, kind, type_, copies))
        if self._waiting:
            self._cond.notify_all()
        subs = self._subs_by_kind.get(kind)
        if not subs:
            return
        for sub in subs:
            if sub.active and (sub.everything or self._matches(obj, sub.namespace, sub.field_selector)):
                sub.handler(_watch_event(type_, obj if sub.shared else copies.copy()))

    @staticmethod
    def _matches(obj: Mapping[str, Any], namespace: str | None, field_selector: str | None) -> bool:
        if namespace and (obj.get("metadata") or {}).get("namespace") != namespace:
            return False
        return match_field_selector(obj, field_selector)

    # -- reads --------------------------------------------------------------------------------------
    def list(
        self,
        kind: str,
        *,
        namespace: str | None = None,
        field_selector: str | None = None,
        label_selector: str | None = None,
    ) -> ListResult:
        with self._lock:
            items = [_copy_in(o) for o in self._listed(kind, namespace, field_selector, label_selector)]
            return ListResult(items, str(self._last_rv))

    def _listed(
        self, kind: str, namespace: str | None, field_selector: str | None, label_selector: str | None
    ) -> builtins.list[dict[str, Any]]:
        """The stored objects that :meth:`list` returns copies of, in its order."""
        sel = parse_selector_string(label_selector)
        return [
            o
            for _, o in sorted(self._bucket(kind).items())
            if self._matches(o, namespace, field_selector) and sel.matches(o["metadata"].get("labels"))
        ]

    def get(self, kind: str, name: str, *, namespace: str | None = None) -> dict[str, Any]:
        with self._lock:
            obj = self._bucket(kind).get(self._key(kind, name, namespace))
            if obj is None:
                raise NotFound(f'{kind_info(kind).plural} "{name}" not found')
            return _copy_in(obj)

    def watch(
        self,
        kind: str,
        *,
        resource_version: str,
        namespace: str | None = None,
        field_selector: str | None = None,
        timeout_seconds: float | None = None,
    ) -> Iterator[WatchEvent]:
        """Events after ``resource_version``; raises :class:`Gone` if that is older than the history."""
        since = int(resource_version or 0)
        with self._lock:
            if self._history and since < self._history[0][0] - 1 and len(self._history) == self._history.maxlen:
                raise Gone(f"too old resource version: {since} ({self._history[0][0]})")
        deadline = None if timeout_seconds is None else self.clock.monotonic() + timeout_seconds
        last = since
        while True:
            with self._lock:
                batch = [
                    (rv, ev)
                    for rv, k, type_, copies in self._history
                    if rv > last and k == kind
                    for ev in (WatchEvent(type_, copies.copy()),)
                    if self._matches(ev.object, namespace, field_selector)
                ]
                if not batch:
                    newest = self._history[-1][0] if self._history else last
                    last = max(last, newest)
                    remaining = None if deadline is None else deadline - self.clock.monotonic()
                    if remaining is not None and remaining <= 0:
                        return
                    self._waiting += 1
                    try:
                        self._cond.wait(timeout=0.05 if remaining is None else min(remaining, 0.05))
                    finally:
                        self._waiting -= 1
                    continue
            for rv, ev in batch:
                last = rv
                yield ev

    def _now_rfc3339(self) -> str:
        """``to_rfc3339(clock.now())``, formatted once per second of the clock: the pods created or started in one
        second share the text."""
        now = int(self.clock.now())
        if self._stamp[0] != now:
            self._stamp = (now, to_rfc3339(now))
        return self._stamp[1]

    # -- writes -------------------------------------------------------------------------------------
    def create(self, kind: str, obj: Mapping[str, Any]) -> dict[str, Any]:
        with self._lock:
            return self._create(kind, obj).copy()

    def _create(self, kind: str, obj: Mapping[str, Any]) -> _Copies:
        """Store a copy of ``obj`` as a new object and emit it; the new version's :class:`_Copies`."""
        info = kind_info(kind)
        with self._lock:
            new = _copy_in(obj if type(obj) is dict else dict(obj))
            meta = new.setdefault("metadata", {})
            if not meta.get("name"):
                if meta.get("generateName"):
                    meta["name"] = f"{meta['generateName']}{uuid.uuid4().hex[:5]}"
                else:
                    raise ValueError(f"{kind}: metadata.name is required")
            if info.namespaced:
                meta["namespace"] = meta.get("namespace") or "default"
            else:
                meta.pop("namespace", None)
            # _key and _bucket, with the kind's info looked up once
            key = _object_key(info.namespaced, meta["name"], meta.get("namespace"))
            bucket = self._objects.setdefault(kind, {})
            if key in bucket:
                raise Conflict(f'{info.plural} "{meta["name"]}" already exists', reason="AlreadyExists")
            new["apiVersion"] = info.api_version
            new["kind"] = kind
            if "uid" not in meta:
                meta["uid"] = str(uuid.uuid4())
            if "creationTimestamp" not in meta:
                meta["creationTimestamp"] = self._now_rfc3339()
            meta["resourceVersion"] = self._next_rv()
            if kind == "Pod":
                new.setdefault("status", {}).setdefault("phase", "Pending")
                if new.get("spec", {}).get("nodeName") and self.auto_run:
                    self._run_pod(new)
            bucket[key] = new
            copies = _Copies(new)
            self._emit(kind, "ADDED", new, copies)
            return copies

    def load(self, objects: Iterable[Mapping[str, Any]]) -> None:
        """Create every object of a snapshot (``kind`` taken from each).  Nothing is returned, so no copy of the
        stored versions is made for the caller."""
        for o in objects:
            self._create(str(o.get("kind")), o)

    def _store(self, kind: str, key: _Key, new: dict[str, Any], *, copy_back: bool = True) -> dict[str, Any]:
        """Store ``new`` (owned by the store from now on) as the next version; a copy for the caller.

        Stored objects are never changed in place, only replaced, so versions may share unchanged parts.
        """
        new["metadata"] = {**new["metadata"], "resourceVersion": self._next_rv()}
        bucket = self._objects.get(kind)   # _bucket: the kind was checked to find the object
        if bucket is None:
            bucket = self._objects[kind] = {}
        bucket[key] = new
        copies = _Copies(new)
        self._emit(kind, "MODIFIED", new, copies)
        return copies.copy() if copy_back else new

    def replace(self, kind: str, obj: Mapping[str, Any]) -> dict[str, Any]:
        with self._lock:
            meta = obj.get("metadata") or {}
            key = self._key(kind, str(meta.get("name")), meta.get("namespace"))
            cur = self._bucket(kind).get(key)
            if cur is None:
                raise NotFound(f'{kind_info(kind).plural} "{meta.get("name")}" not found')
            rv = meta.get("resourceVersion")
            if rv and rv != cur["metadata"]["resourceVersion"]:
                raise Conflict(
                    f"Operation cannot be fulfilled on {kind_info(kind).plural} \"{meta.get('name')}\": "
                    "the object has been modified; please apply your changes to the latest version and try again"
                )
            new = _copy_in(dict(obj))
            new["metadata"] = {**cur["metadata"], **new.get("metadata", {})}
            new["apiVersion"], new["kind"] = cur["apiVersion"], kind
            return self._store(kind, key, new)

    def patch(self, kind: str, name: str, patch: Mapping[str, Any], *, namespace: str | None = None) -> dict[str, Any]:
        with self._lock:
            key = self._key(kind, name, namespace)
            cur = self._bucket(kind).get(key)
            if cur is None:
                raise NotFound(f'{kind_info(kind).plural} "{name}" not found')
            rv = (patch.get("metadata") or {}).get("resourceVersion")
            if rv is not None and rv != cur["metadata"]["resourceVersion"]:  # a patch may carry a precondition
                raise Conflict(
                    f"Operation cannot be fulfilled on {kind_info(kind).plural} \"{name}\": "
                    "the object has been modified; please apply your changes to the latest version and try again"
                )
            body = {k: v for k, v in patch.items() if k != "status"}
            new = merge_patch(cur, body)
            return self._store(kind, key, new)

    def patch_status(
        self, kind: str, name: str, patch: Mapping[str, Any], *, namespace: str | None = None
    ) -> dict[str, Any]:
        return self._merge_status(kind, name, namespace, patch.get("status") or {}, handed_over=False)

    def patch_conditions(
        self,
        kind: str,
        name: str,
        conditions: Sequence[Mapping[str, Any]],
        *,
        namespace: str | None = None,
        status: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Merge ``conditions`` into ``status.conditions`` by type (and ``status``'s other fields into the status),
        atomically: the store's lock is the API server's strategic merge."""
        with self._lock:
            cur = self._bucket(kind).get(self._key(kind, name, namespace))
            if cur is None:
                raise NotFound(f'{kind_info(kind).plural} "{name}" not found')
            body = {k: v for k, v in (status or {}).items() if k != "conditions"}
            if conditions:
                body["conditions"] = merge_conditions((cur.get("status") or {}).get("conditions"), conditions)
            return self._merge_status(kind, name, namespace, body, handed_over=False)

    def write_status(
        self, kind: str, name: str, status: dict[str, Any], *, namespace: str | None = None,
        layout: Layout | None = None,
    ) -> dict[str, Any]:
        """``patch_status(kind, name, {"status": status})`` for a writer that hands ``status`` over.

        ``status`` is merged into the stored object without a copy, so the caller keeps no reference to it or
        to anything in it (a freshly built status, as the simulator's agents write every report).  The stored
        version itself is returned, no copy made: the caller must not change it (as a shared informer's
        handler must not).  The stored object and the events are exactly those of :meth:`patch_status`.

        ``layout``: ``common.cluster.layout(status)``, from a writer that knows it without walking ``status``.
        When the stored status is one this method stored and of that same layout, the merge would give
        ``status`` itself, so it is not walked.
        """
        with self._lock:
            key = self._key(kind, name, namespace)
            cur = self._bucket(kind).get(key)
            last = self._layouts.get((kind, key)) if layout is not None else None
            if cur is None or last is None or last[0] is not cur.get("status") or last[1] != layout:
                stored = self._merge_status(kind, name, namespace, status, handed_over=True)
                if layout is not None:
                    self._remember_layout(kind, key, stored["status"])
                return stored
            new = dict(cur)
            new["status"] = status
            self._layouts[(kind, key)] = (status, layout)
            return self._store(kind, key, new, copy_back=False)

    def _remember_layout(self, kind: str, key: _Key, status: dict[str, Any]) -> None:
        """Note the layout of ``status``, just stored by a merge (the rare write whose merge was not skipped)."""
        got = layout(status)
        if got is None:
            self._layouts.pop((kind, key), None)
        else:
            self._layouts[(kind, key)] = (status, got)

    def _merge_status(
        self, kind: str, name: str, namespace: str | None, status: Mapping[str, Any], *, handed_over: bool
    ) -> dict[str, Any]:
        """Merge ``status`` into the stored object's status.  ``handed_over``: the caller keeps no reference to
        ``status``, so it is neither copied in nor is a copy of the result made for the caller."""
        with self._lock:
            key = self._key(kind, name, namespace)
            cur = self._bucket(kind).get(key)
            if cur is None:
                raise NotFound(f'{kind_info(kind).plural} "{name}" not found')
            # Copy-on-write: only the status is new; the rest is shared with the version it replaces.
            new = dict(cur)
            new["status"] = merge_patch(cur.get("status") or {}, status, copy=not handed_over)
            return self._store(kind, key, new, copy_back=not handed_over)

    def delete(self, kind: str, name: str, *, namespace: str | None = None) -> None:
        with self._lock:
            key = self._key(kind, name, namespace)
            cur = self._bucket(kind).pop(key, None)
            if cur is None:
                raise NotFound(f'{kind_info(kind).plural} "{name}" not found')
            self._layouts.pop((kind, key), None)
            # Copy-on-write, as every new version: the deleted object under a resourceVersion of its own.
            gone = {**cur, "metadata": {**cur["metadata"], "resourceVersion": self._next_rv()}}
            self._emit(kind, "DELETED", gone)

    # -- subresources -------------------------------------------------------------------------------
    def _run_pod(self, pod: dict[str, Any]) -> None:
        """Make ``pod`` (a new version, not yet stored) Running and Ready; its status is replaced, not changed."""
        status = pod["status"] = dict(pod.get("status", _NONE))
        status["phase"] = "Running"
        if "startTime" not in status:
            status["startTime"] = self._now_rfc3339()
        earlier = status.get("conditions")
        conds = [c for c in earlier if c.get("type") not in ("Ready", "PodScheduled")] if earlier else []
        conds.append({"type": "PodScheduled", "status": "True"})
        conds.append({"type": "Ready", "status": "True"})
        status["conditions"] = conds

    def bind(self, namespace: str, name: str, node: str, *, uid: str | None = None) -> None:
        with self._lock:
            key = ("default" if not namespace else namespace, name)
            objects = self._objects
            cur = objects.get("Pod", _NONE).get(key)
            if cur is None:
                raise NotFound(f'pods "{name}" not found')
            if uid and cur["metadata"].get("uid") != uid:
                raise Conflict(f'pods "{name}": uid mismatch (the pod was recreated)')
            spec = cur.get("spec", _NONE)
            if spec.get("nodeName"):
                raise Conflict(f'pod {namespace}/{name} is already assigned to node "{cur["spec"]["nodeName"]}"')
            if ("", node) not in objects.get("Node", _NONE):
                raise NotFound(f'nodes "{node}" not found')
            new = {**cur, "spec": {**spec, "nodeName": node}}  # copy-on-write
            if self.auto_run:
                self._run_pod(new)
            self.bindings.append((f"{key[0]}/{name}", node))
            self._store("Pod", key, new, copy_back=False)

    def _pdb_allows(self, pod: Mapping[str, Any]) -> tuple[bool, str]:
        ns = pod["metadata"].get("namespace", "default")
        labels = pod["metadata"].get("labels") or {}
        for (pdb_ns, pdb_name), pdb in sorted(self._bucket("PodDisruptionBudget").items()):
            if pdb_ns != ns:
                continue
            spec = pdb.get("spec") or {}
            sel = LabelSelector.parse(spec.get("selector"))
            if sel.empty or not sel.matches(labels):
                continue
            matching = [
                p
                for (p_ns, _), p in self._bucket("Pod").items()
                if p_ns == ns and sel.matches(p["metadata"].get("labels"))
            ]
            healthy = sum(
                1
                for p in matching
                if not p["metadata"].get("deletionTimestamp")
                and any(c.get("type") == "Ready" and c.get("status") == "True" for c in p.get("status", {}).get("conditions") or [])
            )
            total = len(matching)
            if "minAvailable" in spec:
                desired = _int_or_percent(spec["minAvailable"], total, round_up=True)
            elif "maxUnavailable" in spec:
                desired = total - _int_or_percent(spec["maxUnavailable"], total, round_up=True)
            else:
                continue
            if healthy - desired <= 0:
                return False, f"Cannot evict pod as it would violate the pod's disruption budget ({pdb_name})."
        return True, ""

    def evict(self, namespace: str, name: str, *, grace_period_seconds: int | None = None) -> None:
        with self._lock:
            key = (namespace or "default", name)
            cur = self._bucket("Pod").get(key)
            if cur is None:
                raise NotFound(f'pods "{name}" not found')
            if cur["metadata"].get("deletionTimestamp"):
                return  # already terminating: the API server accepts and does nothing new
            ok, why = self._pdb_allows(cur)
            if not ok:
                self.refused_evictions.append(f"{key[0]}/{name}")
                raise TooManyRequests(why, reason="DisruptionBudget")
            self.evictions.append(f"{key[0]}/{name}")
            grace = grace_period_seconds
            if grace is None:
                grace = int((cur.get("spec") or {}).get("terminationGracePeriodSeconds", 30))
            if not self.graceful_deletion or grace <= 0:
                self.delete("Pod", name, namespace=key[0])
                return
            meta = {**cur["metadata"], "deletionTimestamp": to_rfc3339(self.clock.now() + grace),
                    "deletionGracePeriodSeconds": grace}
            self._store("Pod", key, {**cur, "metadata": meta})

    def reap(self) -> builtins.list[str]:
        """Delete terminating pods whose grace period has passed; returns their keys."""
        done: builtins.list[str] = []
        with self._lock:
            now = self.clock.now()
            for (ns, name), pod in list(self._bucket("Pod").items()):
                ts = pod["metadata"].get("deletionTimestamp")
                if ts and parse_rfc3339(ts) <= now:
                    self.delete("Pod", name, namespace=ns)
                    done.append(f"{ns}/{name}")
        return done

    def emit_event(self, event: EventRecord) -> None:
        with self._lock:
            self.events.append(event)

    # -- informers ----------------------------------------------------------------------------------
    def informer(
        self,
        kind: str,
        handler: Handler,
        *,
        namespace: str | None = None,
        field_selector: str | None = None,
        shared: bool = False,
    ) -> _MemoryInformer:
        """See :meth:`common.cluster.Cluster.informer`; a ``shared`` handler gets the stored versions themselves,
        both in the initial list and in the events."""
        kind_info(kind)
        return _MemoryInformer(self, _Sub(kind, handler, namespace, field_selector, shared))

    def _start_informer(self, inf: _MemoryInformer) -> None:
        sub = inf.sub
        with self._lock:
            for obj in self._listed(sub.kind, sub.namespace, sub.field_selector, None):
                sub.handler(WatchEvent("ADDED", obj if sub.shared else _copy_in(obj)))
            self._subs.append(sub)
            self._subs_by_kind[sub.kind] = (*self._subs_by_kind.get(sub.kind, ()), sub)
            inf.synced = True

    def _remove_sub(self, sub: _Sub) -> None:
        with self._lock:
            if sub in self._subs:
                self._subs.remove(sub)
                self._subs_by_kind[sub.kind] = tuple(s for s in self._subs_by_kind[sub.kind] if s is not sub)


class _Copies:
    """Independent deep copies of one version of an object: pickled when the first copy is made, unpickled for
    each copy; a version that nobody copies is never pickled.

    Until then it holds the version itself (a stored version is never changed in place, so it stays what it
    was); the pickle then takes its place (a few KB where the object tree takes tens).  An object that is not
    plain data stays as it is and is copied by :func:`_tree_copy`.
    """

    __slots__ = ("version", "tried")

    def __init__(self, obj: dict[str, Any]) -> None:
        # What every copy is made from, and what the watch history keeps: the pickle, or the object itself.
        self.version: bytes | dict[str, Any] = obj
        self.tried = False  # whether pickling it was tried

    def copy(self) -> dict[str, Any]:
        version = self.version
        if not self.tried:
            self.tried = True
            pickled = pickle_plain(version)
            if pickled is not None:
                self.version = version = pickled
        if type(version) is bytes:
            return cast(dict[str, Any], pickle.loads(version))
        return _tree_copy(cast(dict[str, Any], version))


def _copy_in(v: _T) -> _T:
    """A private deep copy of API data: no container shared with ``v``, nor between two places of the copy."""
    pickled = pickle_plain(v)
    return cast(_T, pickle.loads(pickled)) if pickled is not None else _tree_copy(v)


def _tree_copy(v: _T) -> _T:
    """A deep copy of API data (dicts, lists, scalars), several times faster than ``copy.deepcopy``.

    The copy for data that is not plain (see :func:`common.cluster.pickle_plain`), which the pickle round trip of
    :class:`_Copies` and :func:`_copy_in` refuses; anything that is not JSON-like still goes through
    ``copy.deepcopy``.
    """
    t = type(v)
    if t is dict:
        return cast(_T, {k: _tree_copy(x) for k, x in cast(dict[Any, Any], v).items()})
    if t is list:
        return cast(_T, [_tree_copy(x) for x in cast(list[Any], v)])
    if t is str or t is int or t is float or t is bool or v is None:
        return v
    return copy.deepcopy(v)


def _int_or_percent(v: Any, total: int, *, round_up: bool) -> int:
    if isinstance(v, str) and v.endswith("%"):
        pct = int(v[:-1])
        num = pct * total
        return -(-num // 100) if round_up else num // 100
    return int(v)
