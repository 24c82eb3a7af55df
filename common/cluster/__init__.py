"""The cluster interface: what the agent and the scheduler need from Kubernetes, and nothing more.

Two backends implement :class:`Cluster`: ``common.cluster.memory.MemoryCluster`` (an embedded
in-process cluster with watches and resourceVersions) and ``common.cluster.kube.KubeCluster``
(the official ``kubernetes`` client).  Objects cross this boundary as plain Kubernetes dicts;
callers parse them into ``common.objects`` views once.

Patches are JSON merge patches (RFC 7386) on both backends.
"""

from __future__ import annotations

import io
import pickle
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

__all__ = [
    "ApiError",
    "NotFound",
    "Conflict",
    "Gone",
    "TooManyRequests",
    "WatchEvent",
    "ListResult",
    "EventRecord",
    "merge_conditions",
    "Handler",
    "Informer",
    "Cluster",
    "merge_patch",
    "Layout",
    "layout",
    "pickle_plain",
]


class ApiError(Exception):
    """An API call that the server (or the emulated server) refused."""

    status = 500

    def __init__(self, message: str, *, status: int | None = None, reason: str = "") -> None:
        super().__init__(message)
        if status is not None:
            self.status = status
        self.reason = reason or type(self).__name__


class NotFound(ApiError):
    status = 404


class Conflict(ApiError):
    """409: a resourceVersion conflict, an object that already exists, or a pod already bound."""

    status = 409


class Gone(ApiError):
    """410: the requested resourceVersion is too old to watch from; relist."""

    status = 410


class TooManyRequests(ApiError):
    """429: for an eviction, a PodDisruptionBudget refused it."""

    status = 429


@dataclass(frozen=True, slots=True)
class WatchEvent:
    type: str  # ADDED | MODIFIED | DELETED | BOOKMARK
    object: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class ListResult:
    items: list[dict[str, Any]]
    resource_version: str


@dataclass(frozen=True, slots=True)
class EventRecord:
    """A ``v1`` Event about one object, as kube components emit them."""

    kind: str
    name: str
    namespace: str
    reason: str
    message: str
    type: str = "Normal"  # Normal | Warning
    uid: str = ""
    component: str = "loadwise"
    action: str = ""
    extra: Mapping[str, Any] = field(default_factory=dict)


Handler = Callable[[WatchEvent], None]


class Informer(Protocol):
    """List-then-watch that feeds a handler; resumes from the last resourceVersion, relists on 410."""

    def start(self) -> None: ...

    def stop(self) -> None: ...

    def has_synced(self) -> bool: ...


class Cluster(Protocol):
    def list(
        self,
        kind: str,
        *,
        namespace: str | None = None,
        field_selector: str | None = None,
        label_selector: str | None = None,
    ) -> ListResult: ...

    def watch(
        self,
        kind: str,
        *,
        resource_version: str,
        namespace: str | None = None,
        field_selector: str | None = None,
        timeout_seconds: float | None = None,
    ) -> Iterator[WatchEvent]: ...

    def get(self, kind: str, name: str, *, namespace: str | None = None) -> dict[str, Any]: ...

    def create(self, kind: str, obj: Mapping[str, Any]) -> dict[str, Any]: ...

    def replace(self, kind: str, obj: Mapping[str, Any]) -> dict[str, Any]:
        """Update the whole object; a stale ``metadata.resourceVersion`` raises :class:`Conflict`."""
        ...

    def patch(self, kind: str, name: str, patch: Mapping[str, Any], *, namespace: str | None = None) -> dict[str, Any]:
        """Merge patch; a ``metadata.resourceVersion`` in it is a precondition (stale: :class:`Conflict`)."""
        ...

    def patch_status(
        self, kind: str, name: str, patch: Mapping[str, Any], *, namespace: str | None = None
    ) -> dict[str, Any]: ...

    def patch_conditions(
        self,
        kind: str,
        name: str,
        conditions: Sequence[Mapping[str, Any]],
        *,
        namespace: str | None = None,
        status: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Set ``status.conditions`` entries by their ``type``, leaving every other writer's conditions alone.

        Each given condition is merged into the stored one of the same type (or appended), as a strategic merge
        patch does with the list's merge key: a kubelet updating the node's ``Ready`` while an agent sets its own
        condition loses nothing.  ``status`` holds other status fields to merge in the same write.  Kinds of the
        core group take a strategic merge patch; other groups (custom resources have none) a merge patch guarded
        by the resourceVersion just read, retried on :class:`Conflict`.
        """
        ...

    def delete(self, kind: str, name: str, *, namespace: str | None = None) -> None: ...

    def bind(self, namespace: str, name: str, node: str, *, uid: str | None = None) -> None:
        """``pods/binding``; binding an already bound pod raises :class:`Conflict`."""
        ...

    def evict(self, namespace: str, name: str, *, grace_period_seconds: int | None = None) -> None:
        """``pods/eviction`` (policy/v1); a PDB refusal raises :class:`TooManyRequests`."""
        ...

    def emit_event(self, event: EventRecord) -> None: ...

    def informer(
        self,
        kind: str,
        handler: Handler,
        *,
        namespace: str | None = None,
        field_selector: str | None = None,
        shared: bool = False,
    ) -> Informer:
        """An informer (not started) that feeds ``handler`` the objects of ``kind``, then every change to them.

        By default each event object is the handler's own copy: changing it changes nothing in the cluster nor
        what other informers deliver.
        ``shared=True`` is the handler's promise to treat every event object, and everything reachable from it,
        as read-only, and to keep it from code that might change it; the backend may then hand it the very
        object it stores, shared with other readers and with later versions of the object, instead of a copy.
        A backend whose objects are fresh anyway (decoded from the API server's JSON) ignores it.
        """
        ...


def merge_conditions(current: Any, conditions: Sequence[Mapping[str, Any]]) -> list[Any]:
    """``current`` (a ``status.conditions`` value) with ``conditions`` merged in by ``type``: the strategic merge
    of a list whose merge key is ``type``.  An entry of a type already present is merged into it (a ``None``
    value removes that field) in its place; one of a new type is appended; the rest are kept as they are.
    Returns a new list; its merged entries are new dicts, the inputs are not changed."""
    out: list[Any] = list(current) if isinstance(current, list) else []
    at = {c.get("type"): i for i, c in enumerate(out) if isinstance(c, Mapping)}
    for cond in conditions:
        kind = cond.get("type")
        if not isinstance(kind, str) or not kind:
            raise ValueError(f"a condition needs a type, not {kind!r}")
        i = at.get(kind)
        if i is None:
            at[kind] = len(out)
            out.append({k: v for k, v in cond.items() if v is not None})
        else:
            out[i] = merge_patch(out[i], dict(cond))
    return out


def merge_patch(target: Any, patch: Any, *, copy: bool = True) -> Any:
    """RFC 7386 JSON merge patch; returns a new value, never mutates its inputs.

    The result shares the parts of ``target`` that the patch leaves alone and holds copies of the patch's
    values: a patch of plain data is copied in one pickle round trip, anything else value by value.  With
    ``copy=False`` it holds the patch's own values instead, for a caller that hands the patch over: then the
    patch's dicts themselves may become the result's (and be changed to be so), so the patch must not hold
    one dict in two places.
    """
    if not copy:
        return _merge_handed_over(target, patch)
    pickled = pickle_plain(patch)
    if pickled is None:
        return _merge(target, patch, _copy)
    return _merge(target, pickle.loads(pickled), _own)


def _merge(target: Any, patch: Any, copy: Callable[[Any], Any]) -> Any:
    kind = type(patch)
    if kind is not dict and (kind in _LEAVES or not isinstance(patch, Mapping)):
        return copy(patch)
    result: dict[str, Any] = dict(target) if type(target) is dict or isinstance(target, Mapping) else {}
    for k, v in patch.items():
        if v is None:
            result.pop(k, None)
        else:
            result[k] = _merge(result.get(k), v, copy)
    return result


def _merge_handed_over(target: Any, patch: Any) -> Any:
    """``_merge(target, patch, _own)`` for a patch nobody else holds: a patch dict whose keys are the target's, in
    the same order, becomes the result itself (the merge would only copy the target's keys in that order and
    replace every value), with its dict values merged the same way and its ``None`` values removed."""
    if type(patch) is not dict or type(target) is not dict or list(target) != list(patch):
        return _merge(target, patch, _own)
    dropped = False
    for k, v in patch.items():
        kind = type(v)
        if v is None:
            dropped = True
        elif kind is dict:
            patch[k] = _merge_handed_over(target[k], v)
        elif kind not in _LEAVES:
            patch[k] = _merge(target[k], v, _own)
    if dropped:
        for k in [k for k, v in patch.items() if v is None]:
            del patch[k]
    return patch


# Types a merge patch replaces as a whole (the common ones, spared the Mapping check).
_LEAVES = frozenset({str, int, float, bool, type(None), list})

Layout = tuple[tuple[str, "Layout | None"], ...]
"""A dict's keys in order, each with the layout of its value when that is a dict too (None for any other value)."""


def layout(value: dict[str, Any]) -> Layout | None:
    """The keys of ``value`` and of every dict in it, in order and nested as they are (:data:`Layout`); None when
    ``value`` holds a ``None`` or a mapping that is not a ``dict`` anywhere in its dicts.

    What it is for: merging a patch into a target of the same layout (both not None) gives the patch itself, key
    for key and in its order, since every key of the target is replaced (a dict by the merge of two dicts of one
    layout) and none is added, removed or kept.  A caller that knows two layouts are equal may skip the merge.
    """
    out: list[tuple[str, Layout | None]] = []
    for k, v in value.items():
        kind = type(v)
        if kind is dict:
            inner = layout(v)
            if inner is None:
                return None
            out.append((k, inner))
        elif v is None or (kind not in _LEAVES and isinstance(v, Mapping)):
            return None
        else:
            out.append((k, None))
    return tuple(out)


def _own(v: Any) -> Any:
    """A value of a patch whose values are the result's own (a private copy, or handed over)."""
    return v


def _copy(v: Any) -> Any:
    if isinstance(v, Mapping):
        return {k: _copy(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_copy(x) for x in v]
    return v


class _NotPlain(Exception):
    """Raised while pickling a value that is not plain data."""


class _PlainPickler(pickle.Pickler):
    """Pickles plain data only.

    The C pickler writes exact ``dict``, ``list``, ``tuple``, ``set``, ``frozenset``, ``str``, ``bytes``,
    ``bytearray``, ``int``, ``float``, ``bool`` and ``None`` itself and calls :meth:`reducer_override` for every
    other object, which refuses it: a subclass (an ``OrderedDict``, a NumPy scalar, an enum) is never taken for
    plain data.
    """

    def reducer_override(self, obj: Any) -> Any:
        raise _NotPlain(type(obj).__name__)


def pickle_plain(value: Any) -> bytes | None:
    """``value`` pickled if it is plain data (see :class:`_PlainPickler`), else ``None``.

    Unpickling the result gives an independent deep copy, of the same types, equal to ``value``.  An object
    reached twice is written twice (pickle's fast mode: no memo), so no two places of a copy share a container,
    as with a recursive copy, and a cyclic value is refused (``None``).  Without the memo, plain API data also
    pickles and unpickles faster.
    """
    # One pickler and buffer per thread, reused (setting them up cost as much as pickling an object): taken out
    # while in use, and not put back after a dump that stopped half-way.
    state: tuple[io.BytesIO, _PlainPickler] | None = getattr(_PICKLER, "state", None)
    _PICKLER.state = None
    if state is None:
        buf = io.BytesIO()
        pickler = _PlainPickler(buf, pickle.HIGHEST_PROTOCOL)
        pickler.fast = True
        state = (buf, pickler)
    buf, pickler = state
    buf.seek(0)
    buf.truncate()
    try:
        pickler.dump(value)
    except (_NotPlain, ValueError, RecursionError):
        return None
    data = buf.getvalue()
    _PICKLER.state = state
    return data


_PICKLER = threading.local()
