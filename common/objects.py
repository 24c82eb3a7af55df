"""Typed, read-only views of the Kubernetes objects Loadwise reads.

Raw API dicts are parsed once here, at the edge; the core only sees these frozen values.  Every
view keeps ``raw`` for writing back and for anything the view does not model.
"""

from __future__ import annotations

import functools
import marshal
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Protocol, TypeGuard, TypeVar, overload

from common.clock import parse_rfc3339
from common.duration import parse_duration
from common.podshape import check_pod_metadata, check_pod_spec, check_strings
from common.podspec import PodResources, pod_resources
from common.qos import KOORD_PRIORITY_LABEL, KOORD_QOS_LABEL, PriorityClass, QoSClass, koord_qos, pod_priority_class
from common.resources import Resources
from common.slots import slot_maker

__all__ = [
    "GROUP_NAME_ANNOTATION",
    "Taint",
    "NodeView",
    "PodView",
    "PodMetricView",
    "NodeMetricView",
    "PodsMetric",
    "ReportedPod",
    "ReportedPods",
    "PodGroupView",
    "QueueView",
    "PriorityClassView",
    "AGGREGATION_TYPES",
]

GROUP_NAME_ANNOTATION = "scheduling.loadwise.io/group-name"
VOLCANO_GROUP_ANNOTATION = "scheduling.k8s.io/group-name"
AGGREGATION_TYPES = ("avg", "p50", "p90", "p95", "p99")


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


_View = TypeVar("_View")


def _parser(kind: str) -> Callable[[Callable[[Any, Mapping[str, Any]], _View]], Callable[[Any, Mapping[str, Any]], _View]]:
    """Every error a view's ``parse`` raises is a ValueError naming the object: the top-level sections must be
    objects (named when they are not), and a deeper part of the wrong shape (a string where a list of objects
    belongs) is reported as a malformed object instead of escaping as AttributeError or TypeError, which the
    scheduler's cache and the command line treat as bugs, not as bad input."""

    def wrap(parse: Callable[[Any, Mapping[str, Any]], _View]) -> Callable[[Any, Mapping[str, Any]], _View]:
        @functools.wraps(parse)
        def checked(cls: Any, obj: Mapping[str, Any]) -> _View:
            if type(obj) is not dict and not isinstance(obj, Mapping):
                raise ValueError(f"{kind}: expected an object, got {obj!r:.60}")
            for section in ("metadata", "spec", "status"):
                v = obj.get(section)
                if v is not None and type(v) is not dict and not isinstance(v, Mapping):
                    raise ValueError(f"{_where(kind, obj)}: {section}: expected an object, got {v!r:.60}")
            try:
                return parse(cls, obj)
            except (AttributeError, TypeError, KeyError) as exc:
                # chained: were it a bug in the parser rather than in the object, the traceback still shows where
                raise ValueError(f"{_where(kind, obj)}: malformed object ({type(exc).__name__}: {exc})") from exc

        return checked

    return wrap


_NAMESPACED = frozenset({"Pod", "PodGroup"})


def _where(kind: str, obj: Mapping[str, Any]) -> str:
    """How an error names the object: its kind and (namespace and) name, when its metadata is an object."""
    meta = obj.get("metadata")
    if not isinstance(meta, Mapping):
        return kind
    ns, name = meta.get("namespace"), meta.get("name", "")
    return f"{kind} {ns}/{name}" if ns and kind in _NAMESPACED else f"{kind} {name}"


def _maps(raw: Any, field_name: str) -> list[Mapping[str, Any]]:
    """A list of objects (conditions, taints, owner references ...); absent is empty, anything else names the
    field and the item."""
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise ValueError(f"{field_name}: expected a list, got {raw!r:.60}")
    for i, item in enumerate(raw):
        if type(item) is not dict and not isinstance(item, Mapping):
            raise ValueError(f"{field_name}[{i}]: expected an object, got {item!r:.60}")
    return raw


def _map(raw: Any, field_name: str) -> Mapping[str, Any]:
    """An object field; absent is empty."""
    if raw is None:
        return {}
    if type(raw) is not dict and not isinstance(raw, Mapping):   # a dict is one: the ABC check for the rest
        raise ValueError(f"{field_name}: expected an object, got {raw!r:.60}")
    return raw


def _boolean(raw: Any, default: bool, field_name: str) -> bool:
    """A boolean field: a string such as ``"yes"`` is refused, not read as true."""
    if raw is None:
        return default
    if not isinstance(raw, bool):
        raise ValueError(f"{field_name}: expected true or false, got {raw!r:.60}")
    return raw


def _ready(conditions: Any, field_name: str) -> bool | None:
    """The Ready condition's status (``None`` without one); a list of plain dicts (parsed JSON) is read in one
    pass, anything else checked first by :func:`_maps`."""
    ready = None
    if type(conditions) is list:
        for cond in conditions:
            if type(cond) is not dict:
                break
            if cond.get("type") == "Ready":
                ready = cond.get("status") == "True"
        else:
            return ready
        ready = None
    for cond in _maps(conditions, field_name):
        if cond.get("type") == "Ready":
            ready = cond.get("status") == "True"
    return ready


def _strings(raw: Any, field_name: str) -> dict[str, str]:
    """A map of strings (labels, annotations)."""
    check_strings(raw, field_name)
    return dict(raw) if raw is not None else {}


_INTEGER_TEXT = re.compile(r"\s*[+-]?[0-9]+\s*")


def _integer(raw: Any, default: int, field_name: str, *, minimum: int | None = None) -> int:
    """An integer field: absent (None) is ``default``; a whole float (YAML's ``2.0``) or a digit string is read
    as the API server would have, anything else is an error naming the field."""
    if raw is None:
        return default
    if type(raw) is int:
        value = raw
    elif isinstance(raw, float) and raw.is_integer():
        value = int(raw)
    elif isinstance(raw, str) and _INTEGER_TEXT.fullmatch(raw):
        value = int(raw)
    else:
        raise ValueError(f"{field_name}: expected an integer, got {raw!r}")
    if minimum is not None and value < minimum:
        raise ValueError(f"{field_name} must be >= {minimum}")
    return value


def _time(raw: Any, field_name: str) -> float | None:
    if not raw:
        return None
    text = str(raw)
    try:
        return _cached_time(text)
    except ValueError:
        return parse_rfc3339(text, field=field_name)  # raises again, naming the field


def _duration(raw: Any, field_name: str) -> float:
    if type(raw) is str:
        try:
            return _cached_duration(raw)
        except ValueError:
            pass  # parsed again below, for the message that names the field
    return parse_duration(raw, field=field_name)


def _durations(raw: Any, field_name: str) -> tuple[float, ...]:
    if type(raw) is list and all(type(d) is str for d in raw):
        try:
            return _cached_durations(tuple(raw))
        except ValueError:
            pass  # parsed again below, for the message that names the field
    return tuple(_duration(d, field_name) for d in raw)


@lru_cache(maxsize=256)
def _cached_durations(texts: tuple[str, ...]) -> tuple[float, ...]:
    return tuple(_cached_duration(d) for d in texts)


# Every NodeMetric carries the same few durations, and many objects share a timestamp: parse each text once.
_cached_time = lru_cache(maxsize=4096)(parse_rfc3339)
_cached_duration = lru_cache(maxsize=256)(parse_duration)
_DEFAULT_DURATION_SECONDS = tuple(parse_duration(d) for d in ("5m", "10m", "30m"))  # Koordinator's default durations


@dataclass(frozen=True, slots=True)
class Taint:
    key: str
    value: str
    effect: str

    @classmethod
    def parse(cls, raw: Mapping[str, Any]) -> Taint:
        return cls(str(raw.get("key", "")), str(raw.get("value", "") or ""), str(raw.get("effect", "")))


@dataclass(frozen=True, slots=True)
class NodeView:
    name: str
    uid: str
    labels: Mapping[str, str]
    annotations: Mapping[str, str]
    allocatable: Resources
    capacity: Resources
    taints: tuple[Taint, ...]
    unschedulable: bool
    ready: bool
    raw: Mapping[str, Any] = field(repr=False, compare=False)

    @classmethod
    @_parser("Node")
    def parse(cls, obj: Mapping[str, Any]) -> NodeView:
        meta = _meta(obj)
        spec = obj.get("spec") or {}
        status = obj.get("status") or {}
        name = str(meta.get("name", ""))
        where = f"Node {name}"
        capacity = Resources.parse(status.get("capacity"), field=f"{where}: status.capacity")
        allocatable = Resources.parse(status.get("allocatable"), field=f"{where}: status.allocatable")
        if not allocatable and capacity:
            allocatable = capacity
        ready = _ready(status.get("conditions"), f"{where}: status.conditions")
        taints = _maps(spec.get("taints"), f"{where}: spec.taints")
        return cls(
            name=name,
            uid=str(meta.get("uid", "")),
            labels=_strings(meta.get("labels"), f"{where}: metadata.labels"),
            annotations=_strings(meta.get("annotations"), f"{where}: metadata.annotations"),
            allocatable=allocatable,
            capacity=capacity or allocatable,
            taints=tuple(Taint.parse(t) for t in taints),
            unschedulable=_boolean(spec.get("unschedulable"), False, f"{where}: spec.unschedulable"),
            ready=ready is not False,
            raw=obj,
        )


@dataclass(frozen=True, slots=True)
class PodView:
    namespace: str
    name: str
    uid: str
    labels: Mapping[str, str]
    annotations: Mapping[str, str]
    node_name: str
    phase: str
    priority: int
    priority_class_name: str
    scheduler_name: str
    qos: QoSClass
    koord_qos: str
    priority_class: PriorityClass
    requests: Resources
    nonzero_requests: Resources
    limits: Resources
    owner_kind: str
    creation_time: float | None
    start_time: float | None
    deleting: bool
    ready: bool
    node_selector: Mapping[str, str]
    tolerations: tuple[Mapping[str, Any], ...]
    affinity: Mapping[str, Any]
    raw: Mapping[str, Any] = field(repr=False, compare=False)
    # the spec's ``marshal`` serialisation (format 2) when the view was parsed pending from plain data, else None:
    # equal bytes are equal specs (the scheduler's pod signatures read it instead of serialising the spec again)
    spec_bytes: bytes | None = field(default=None, repr=False, compare=False)

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def group_name(self) -> str:
        """The PodGroup this pod belongs to (annotation), or "" for a group of one."""
        return self.annotations.get(GROUP_NAME_ANNOTATION) or self.annotations.get(VOLCANO_GROUP_ANNOTATION, "")

    @property
    def terminal(self) -> bool:
        return self.phase in ("Succeeded", "Failed")

    @property
    def is_daemonset(self) -> bool:
        return self.owner_kind == "DaemonSet"

    @classmethod
    @_parser("Pod")
    def parse(cls, obj: Mapping[str, Any]) -> PodView:
        meta = _meta(obj)
        spec = obj.get("spec") or {}
        status = obj.get("status") or {}
        ns = str(meta.get("namespace", "default") or "default")
        name = str(meta.get("name", ""))
        where = f"Pod {ns}/{name}"
        try:
            check_pod_metadata(obj)
            parts = _spec_parts(obj)
        except ValueError as exc:
            raise ValueError(f"{where}: {exc}") from exc
        resources = parts.resources
        # each field's name for an error is made only when the field is there (a pending pod has none of these)
        owner_kind = ""
        refs = meta.get("ownerReferences")
        for ref in _maps(refs, f"{where}: metadata.ownerReferences") if refs is not None else ():
            if ref.get("controller", True):
                owner_kind = str(ref.get("kind", ""))
                break
        conditions = status.get("conditions")
        ready = conditions is not None and _ready(conditions, f"{where}: status.conditions") is True
        prio = spec.get("priority")
        created, started = meta.get("creationTimestamp"), status.get("startTime")
        labels = meta.get("labels")
        known = parts.koord_qos and not (labels and (KOORD_QOS_LABEL in labels or KOORD_PRIORITY_LABEL in labels))
        koord = parts.koord_qos if known else koord_qos(obj, resources.qos)
        # PodView's fields in their order (see _make_pod_view)
        return _make_pod_view(
            ns, name, str(meta.get("uid", "")), dict(meta.get("labels") or {}), dict(meta.get("annotations") or {}),
            str(spec.get("nodeName", "") or ""), str(status.get("phase", "Pending") or "Pending"),
            _integer(prio, 0, f"{where}: spec.priority") if prio is not None else 0, parts.priority_class_name,
            parts.scheduler_name, resources.qos, koord,
            parts.priority_class if known else pod_priority_class(obj, koord), resources.requests,
            resources.nonzero_requests, resources.limits, owner_kind,
            _time(created, f"{where}: metadata.creationTimestamp") if created else None,
            _time(started, f"{where}: status.startTime") if started else None,
            bool(meta.get("deletionTimestamp")), ready, parts.node_selector, parts.tolerations, parts.affinity, obj,
            parts.spec_bytes)

    def refreshed(self, obj: Mapping[str, Any]) -> PodView | None:
        """``PodView.parse(obj)`` made from this view, for ``obj`` a new version of its pod that changed only what
        binding, status updates, relabelling and deletion change: labels, annotations, deletionTimestamp,
        spec.nodeName and status (the common events; a pod's resources are immutable unless it is resized).  The
        parsed requests are kept, the changed fields read as ``parse`` reads them.  None when anything else that
        ``parse`` reads or checks changed, or the version does not parse (a full parse then says why)."""
        old = self.raw
        meta, spec, status = obj.get("metadata"), obj.get("spec"), obj.get("status")
        old_meta, old_spec = old.get("metadata") or {}, old.get("spec") or {}
        # a plain dict (parsed JSON) is told without a call
        if ((type(meta) is not dict and not _is_map(meta)) or (type(spec) is not dict and not _is_map(spec))
                or not _same_but(spec, old_spec, "nodeName")):
            return None
        for name in _KEPT_META:
            now, was = meta.get(name), old_meta.get(name)
            if now is not was and now != was:
                return None
        if status is None:
            status = {}
        elif type(status) is not dict and not _is_map(status):
            return None
        try:
            raw_labels, raw_annotations = meta.get("labels"), meta.get("annotations")
            # versions share what did not change: the same labels or annotations object is this view's, told here
            if raw_labels is old_meta.get("labels"):
                labels, koord, priority_class = self.labels, self.koord_qos, self.priority_class
            else:
                labels, koord, priority_class = self._relabelled(obj, raw_labels)
            annotations = (self.annotations if raw_annotations is old_meta.get("annotations")
                           else self._annotations_of(raw_annotations))
            ready = _ready(status.get("conditions"), "status.conditions") is True
            started = status.get("startTime")
            # a text is parsed once (the clock's second): its cache asked directly
            start_time = (_cached_time(started) if type(started) is str and started
                          else _time(started, "status.startTime"))
        except (ValueError, AttributeError, TypeError, KeyError):
            return None
        # PodView's fields in their order (see _make_pod_view)
        return _make_pod_view(
            self.namespace, self.name, self.uid, labels, annotations, str(spec.get("nodeName", "") or ""),
            str(status.get("phase", "Pending") or "Pending"), self.priority, self.priority_class_name,
            self.scheduler_name, self.qos, koord, priority_class, self.requests, self.nonzero_requests, self.limits,
            self.owner_kind, self.creation_time, start_time, bool(meta.get("deletionTimestamp")), ready,
            self.node_selector, self.tolerations, self.affinity, obj, self.spec_bytes if spec is old_spec else None)

    def _relabelled(self, obj: Mapping[str, Any], raw: Any) -> tuple[Mapping[str, str], str, PriorityClass]:
        """The labels of a new version of the pod (this view's when they are equal) and what ``parse`` derives
        from them: the Koordinator QoS and priority class."""
        check_strings(raw, "metadata.labels")
        labels = dict(raw or {})
        if labels == self.labels:
            return self.labels, self.koord_qos, self.priority_class
        koord = koord_qos(obj, self.qos)
        return labels, koord, pod_priority_class(obj, koord)

    def _annotations_of(self, raw: Any) -> Mapping[str, str]:
        """The annotations of a new version of the pod (this view's when they are equal)."""
        check_strings(raw, "metadata.annotations")
        annotations = dict(raw or {})
        return self.annotations if annotations == self.annotations else annotations


@dataclass(frozen=True, slots=True)
class _SpecParts:
    """What :meth:`PodView.parse` reads of a pod's spec (and ``status.qosClass``, which its resources read), once
    the spec's shape is checked."""

    resources: PodResources
    priority_class_name: str
    scheduler_name: str
    node_selector: Mapping[str, str]
    tolerations: tuple[Mapping[str, Any], ...]
    affinity: Mapping[str, Any]
    # the Koordinator QoS and priority class of a pod with these parts and no label that sets them ("" and NONE
    # when they are not known without the pod: its spec.priority is not one the priority bands read)
    koord_qos: str
    priority_class: PriorityClass
    spec_bytes: bytes | None   # the spec's serialisation, when the parts are kept by it


# Replicas of one workload are created from one template: a pending pod's spec, as plain data, is often one already
# parsed.  Its parts are kept by the spec's ``marshal`` serialisation (format 2: no back-references, so equal plain
# values written in the same key order give the same bytes, and a value that is not plain data is refused), with
# the status's qosClass.  A bound pod's spec names its node, so it is not kept (nor looked up).
_SPEC_PARTS: dict[tuple[bytes, str | None], _SpecParts] = {}
_SPEC_PARTS_LIMIT = 1024


def _spec_parts(obj: Mapping[str, Any]) -> _SpecParts:
    """The pod's :class:`_SpecParts`, its spec checked (``ValueError`` naming the field): kept per spec for pending
    pods whose spec and qosClass are plain data, so the replicas after the first are not checked nor read again.
    The parts' maps are shared by the views of those pods, as a refreshed view shares them with its previous one."""
    spec = obj.get("spec")
    qos = (obj.get("status") or {}).get("qosClass")
    key = None
    if type(spec) is dict and "nodeName" not in spec and (qos is None or type(qos) is str):
        try:
            key = (marshal.dumps(spec, 2), qos)
        except ValueError:   # not plain data
            key = None
        else:
            hit = _SPEC_PARTS.get(key)
            if hit is not None:
                return hit
    spec_bytes = key[0] if key is not None else None
    check_pod_spec(spec)
    spec = spec or {}
    resources = pod_resources(obj)
    unlabelled = {"spec": spec}
    try:
        koord = koord_qos(unlabelled, resources.qos)
        priority_class = pod_priority_class(unlabelled, koord)
    except (TypeError, ValueError):   # parse reads spec.priority per pod, and says what is wrong with it
        koord, priority_class = "", PriorityClass.NONE
    parts = _SpecParts(resources, str(spec.get("priorityClassName", "") or ""),
                       str(spec.get("schedulerName", "default-scheduler") or "default-scheduler"),
                       dict(spec.get("nodeSelector") or {}), tuple(spec.get("tolerations") or ()),
                       dict(spec.get("affinity") or {}), koord, priority_class, spec_bytes)
    if key is not None:
        if len(_SPEC_PARTS) >= _SPEC_PARTS_LIMIT:
            _SPEC_PARTS.clear()
        _SPEC_PARTS[key] = parts
    return parts


# ``PodView(*values)`` (every field given, by position: keywords cost a Python call as much again), made as its
# slotted twin and turned into a PodView (common.slots): a view is made for every new pod and every bind
_make_pod_view: Callable[..., PodView] = slot_maker(PodView)


# the metadata a refreshed pod view keeps (PodView.refreshed): a version changing any of them is parsed in full
_KEPT_META = ("namespace", "name", "uid", "ownerReferences", "creationTimestamp")
_ABSENT = object()


def _is_map(v: Any) -> TypeGuard[Mapping[str, Any]]:
    """``isinstance(v, Mapping)``, a plain dict (parsed JSON) answered without the abstract class's check."""
    return type(v) is dict or isinstance(v, Mapping)


def _same_but(new: Mapping[str, Any], old: Mapping[str, Any], free: str) -> bool:
    """Whether two objects hold the same entries, ``free``'s aside; compared by identity first, since versions of
    an object share their unchanged parts."""
    n = 0
    for k, v in new.items():
        if k != free:
            was = old.get(k, _ABSENT)
            if v is not was and v != was:
                return False
            n += 1
    return n == len(old) - (free in old)


@dataclass(frozen=True, slots=True)
class PodMetricView:
    namespace: str
    name: str
    usage: Resources
    priority: str
    qos: str

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


# PodMetricView's slots, set directly by _pod_metric.
_set_pod_namespace, _set_pod_name, _set_pod_usage, _set_pod_priority, _set_pod_qos = (
    PodMetricView.__dict__[name].__set__ for name in ("namespace", "name", "usage", "priority", "qos")
)


def _pod_metric(namespace: str, name: str, usage: Resources, priority: str, qos: str) -> PodMetricView:
    """``PodMetricView(namespace, name, usage, priority, qos)``: its slots set directly, as the frozen dataclass's
    ``__init__`` sets them through ``object.__setattr__`` (a NodeMetric carries many pods: about a third cheaper)."""
    view = object.__new__(PodMetricView)
    _set_pod_namespace(view, namespace)
    _set_pod_name(view, name)
    _set_pod_usage(view, usage)
    _set_pod_priority(view, priority)
    _set_pod_qos(view, qos)
    return view


class ReportedPod(Protocol):
    """Who a pod in a ``podsMetric`` is, as its writer knows it (the node agent's ``PodMeta``)."""

    @property
    def namespace(self) -> str: ...

    @property
    def name(self) -> str: ...

    @property
    def priority(self) -> str: ...

    @property
    def qos(self) -> str: ...


class ReportedPods(Sequence[PodMetricView]):
    """The :class:`PodMetricView` of each entry of a ``podsMetric`` handed over by its writer (:class:`PodsMetric`),
    made only when first read: until then, who each pod is (:attr:`pods`) and the quantities its ``podUsage`` text
    parses back to (:attr:`usages`: non-zero, within bounds; each becomes its view's usage).  A reader that needs
    only the numbers takes those two and no view is ever made (the load-aware plugin reads every report so).  Equal
    to, and hashed as, the tuple of its views."""

    __slots__ = ("pods", "usages", "_views")

    def __init__(self, pods: Sequence[ReportedPod], usages: Sequence[dict[str, int]]) -> None:
        self.pods = pods
        self.usages = usages
        self._views: tuple[PodMetricView, ...] | None = None

    def views(self) -> tuple[PodMetricView, ...]:
        views = self._views
        if views is None:
            views = self._views = tuple([_pod_metric(p.namespace, p.name, Resources._trusted(u), p.priority, p.qos)
                                         for p, u in zip(self.pods, self.usages, strict=True)])
        return views

    def __len__(self) -> int:
        return len(self.usages)

    @overload
    def __getitem__(self, i: int) -> PodMetricView: ...

    @overload
    def __getitem__(self, i: slice) -> tuple[PodMetricView, ...]: ...

    def __getitem__(self, i: int | slice) -> PodMetricView | tuple[PodMetricView, ...]:
        return self.views()[i]

    def __iter__(self) -> Iterator[PodMetricView]:
        return iter(self.views())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, ReportedPods):
            return self.views() == other.views()
        return self.views() == other if isinstance(other, tuple) else NotImplemented

    def __hash__(self) -> int:
        return hash(self.views())

    def __repr__(self) -> str:
        return repr(self.views())


class PodsMetric(list[dict[str, Any]]):
    """``status.podsMetric`` handed over by a writer in the same process: the entries (plain API data to every
    reader) with the :class:`ReportedPods` of the same entries, in order, which :meth:`NodeMetricView.parse` takes as
    they are instead of parsing the entries back.  Made only by a writer that derives both from the same numbers
    (the node agent's builder, ``typed=True``); like every stored object it is never changed in place.

    ``node_usage``: the ``nodeUsage.resources`` map written in the same status and the quantities its text parses
    back to (non-zero, within bounds; the view's from now on, as a :class:`Resources`).  The parser takes them only
    while the status it reads holds that very map (a status merged or copied into new maps is parsed from its
    text)."""

    __slots__ = ("pods", "node_usage")

    def __init__(self, entries: list[dict[str, Any]], pods: ReportedPods,
                 node_usage: tuple[Mapping[str, Any], dict[str, int]] | None = None) -> None:
        super().__init__(entries)
        self.pods = pods
        self.node_usage = None if node_usage is None else (node_usage[0], Resources._trusted(node_usage[1]))


@dataclass(frozen=True, slots=True)
class NodeMetricView:
    """``slo.loadwise.io/v1alpha1`` NodeMetric, field names as Koordinator's (docs/design/nodemetric.md §1)."""

    name: str
    update_time: float | None
    node_usage: Resources
    # duration seconds -> aggregation type -> usage; a type whose map was empty is absent.
    aggregated: Mapping[float, Mapping[str, Resources]]
    pods: Sequence[PodMetricView]   # a tuple, or the ReportedPods its writer handed over
    aggregate_duration_seconds: int
    report_interval_seconds: int
    durations: tuple[float, ...]
    node_memory_collect_policy: str
    raw: Mapping[str, Any] = field(repr=False, compare=False)

    @classmethod
    @_parser("NodeMetric")
    def parse(cls, obj: Mapping[str, Any]) -> NodeMetricView:
        """In named steps: the node's usage, its aggregated usages, the pods' usages and the collect policy."""
        name = str(_meta(obj).get("name", ""))
        where = f"NodeMetric {name}"
        status = obj.get("status") or {}
        nm = _map(status.get("nodeMetric"), f"{where}: status.nodeMetric")
        policy = _map((obj.get("spec") or {}).get("metricCollectPolicy"), f"{where}: spec.metricCollectPolicy")
        # its slots set directly (one view per report the scheduler's cache takes in: every node, every minute)
        view: NodeMetricView = _make_node_metric_view(
            name,
            _time(status.get("updateTime"), f"{where}: status.updateTime"),
            _node_usage(nm, where, status.get("podsMetric")),
            _aggregated_usages(nm, where),
            _pods_metric(status.get("podsMetric"), where),
            _integer(policy.get("aggregateDurationSeconds") or None, 300,
                     f"{where}: spec.metricCollectPolicy.aggregateDurationSeconds"),
            _integer(policy.get("reportIntervalSeconds") or None, 60,
                     f"{where}: spec.metricCollectPolicy.reportIntervalSeconds"),
            _aggregate_durations(policy, where),
            str(policy.get("nodeMemoryCollectPolicy", "usageWithoutPageCache")),
            obj,
        )
        return view


_make_node_metric_view = slot_maker(NodeMetricView)


def _node_usage(nm: Mapping[str, Any], where: str, pods: Any) -> Resources:
    """``status.nodeMetric.nodeUsage.resources``; as handed over (:class:`PodsMetric`) when the status still holds
    the very map its writer built along with it."""
    raw_usage = _map(nm.get("nodeUsage"), f"{where}: status.nodeMetric.nodeUsage").get("resources")
    if type(pods) is PodsMetric and pods.node_usage is not None and pods.node_usage[0] is raw_usage:
        return pods.node_usage[1]
    usage = Resources.parse_texts(raw_usage)
    return usage if usage is not None else Resources.parse(raw_usage, field=f"{where}: nodeUsage")


def _aggregated_usages(nm: Mapping[str, Any], where: str) -> dict[float, dict[str, Resources]]:
    """``status.nodeMetric.aggregatedNodeUsages``: duration seconds -> aggregation type -> usage (empty types
    left out)."""
    aggregated: dict[float, dict[str, Resources]] = {}
    raw = nm.get("aggregatedNodeUsages")
    if not raw and type(raw) is list:   # none reported (the field names below are made only when some are)
        return aggregated
    at = f"{where}: status.nodeMetric.aggregatedNodeUsages"
    for i, entry in enumerate(_maps(raw, at)):
        d = _duration(entry.get("duration", "0"), f"{at}[{i}].duration")
        per: dict[str, Resources] = {}
        for agg, rmap in _map(entry.get("usage"), f"{at}[{i}].usage").items():
            raw = _map(rmap, f"{at}[{i}].usage.{agg}").get("resources")
            res = Resources.parse(raw, field=f"{where}: aggregatedNodeUsages[{i}].{agg}")
            if res:
                per[str(agg)] = res
        aggregated[d] = per
    return aggregated


def _pods_metric(raw: Any, where: str) -> Sequence[PodMetricView]:
    """``status.podsMetric``: each pod's usage, on the fast path when every field is the usual string (and as
    handed over when it is a :class:`PodsMetric`)."""
    if type(raw) is PodsMetric:
        return raw.pods
    pods = []
    parse_texts = Resources.parse_texts
    for i, pm in enumerate(_maps(raw, f"{where}: status.podsMetric")):
        raw_usage = _map(pm.get("podUsage"), f"{where}: status.podsMetric[{i}].podUsage").get("resources")
        usage = parse_texts(raw_usage)
        if usage is None:
            usage = Resources.parse(raw_usage, field=f"{where}: podsMetric[{i}]")
        ns, pod, priority, qos = pm.get("namespace", ""), pm.get("name", ""), pm.get("priority", ""), pm.get("qos", "")
        if not (type(ns) is str and type(pod) is str and type(priority) is str and type(qos) is str):
            ns, pod, priority, qos = str(ns), str(pod), str(priority or ""), str(qos or "")
        pods.append(_pod_metric(ns, pod, usage, priority, qos))
    return tuple(pods)


def _aggregate_durations(policy: Mapping[str, Any], where: str) -> tuple[float, ...]:
    """``spec.metricCollectPolicy.nodeAggregatePolicy.durations`` (Koordinator's three when absent)."""
    aggregate = policy.get("nodeAggregatePolicy")
    if type(aggregate) is dict and not aggregate.get("durations"):   # the field name is made only when needed
        return _DEFAULT_DURATION_SECONDS
    at = f"{where}: spec.metricCollectPolicy.nodeAggregatePolicy"
    raw = _map(aggregate, at).get("durations")
    if not raw:
        return _DEFAULT_DURATION_SECONDS
    if not isinstance(raw, list):
        raise ValueError(f"{at}.durations: expected a list, got {raw!r:.60}")
    return _durations(raw, f"{at}.durations")


@dataclass(frozen=True, slots=True)
class PodGroupView:
    """``scheduling.loadwise.io/v1alpha1`` PodGroup with Volcano's v1beta1 field names."""

    namespace: str
    name: str
    uid: str
    min_member: int
    min_task_member: Mapping[str, int]
    min_resources: Resources
    queue: str
    priority_class_name: str
    phase: str
    creation_time: float | None
    annotations: Mapping[str, str]
    raw: Mapping[str, Any] = field(repr=False, compare=False)

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @classmethod
    @_parser("PodGroup")
    def parse(cls, obj: Mapping[str, Any]) -> PodGroupView:
        meta = _meta(obj)
        spec = obj.get("spec") or {}
        status = obj.get("status") or {}
        ns = str(meta.get("namespace", "default") or "default")
        name = str(meta.get("name", ""))
        where = f"PodGroup {ns}/{name}"
        min_member = _integer(spec.get("minMember"), 1, f"{where}: spec.minMember", minimum=0)
        return cls(
            namespace=ns,
            name=name,
            uid=str(meta.get("uid", "")),
            min_member=min_member,
            min_task_member={str(k): _integer(v, 0, f"{where}: spec.minTaskMember.{k}", minimum=0)
                             for k, v in _map(spec.get("minTaskMember"), f"{where}: spec.minTaskMember").items()},
            min_resources=Resources.parse(spec.get("minResources"), field=f"{where}: spec.minResources"),
            queue=str(spec.get("queue", "default") or "default"),
            priority_class_name=str(spec.get("priorityClassName", "") or ""),
            phase=str(status.get("phase", "Pending") or "Pending"),
            creation_time=_time(meta.get("creationTimestamp"), f"{where}: metadata.creationTimestamp"),
            annotations=dict(meta.get("annotations") or {}),
            raw=obj,
        )


@dataclass(frozen=True, slots=True)
class QueueView:
    """``scheduling.loadwise.io/v1alpha1`` Queue with Volcano's field names."""

    name: str
    weight: int
    capability: Resources
    deserved: Resources
    guarantee: Resources
    reclaimable: bool
    priority: int
    parent: str
    state: str
    raw: Mapping[str, Any] = field(repr=False, compare=False)

    @classmethod
    @_parser("Queue")
    def parse(cls, obj: Mapping[str, Any]) -> QueueView:
        meta = _meta(obj)
        spec = obj.get("spec") or {}
        status = obj.get("status") or {}
        name = str(meta.get("name", ""))
        where = f"Queue {name}"
        weight = _integer(spec.get("weight"), 1, f"{where}: spec.weight", minimum=0)
        return cls(
            name=name,
            weight=weight,
            capability=Resources.parse(spec.get("capability"), field=f"{where}: spec.capability"),
            deserved=Resources.parse(spec.get("deserved"), field=f"{where}: spec.deserved"),
            guarantee=Resources.parse(_map(spec.get("guarantee"), f"{where}: spec.guarantee").get("resource"),
                                      field=f"{where}: spec.guarantee.resource"),
            reclaimable=bool(spec.get("reclaimable", True) if spec.get("reclaimable") is not None else True),
            priority=_integer(spec.get("priority") or None, 0, f"{where}: spec.priority"),
            parent=str(spec.get("parent", "") or ""),
            state=str(status.get("state", "Open") or "Open"),
            raw=obj,
        )


@dataclass(frozen=True, slots=True)
class PriorityClassView:
    name: str
    value: int
    global_default: bool
    preemption_policy: str
    raw: Mapping[str, Any] = field(repr=False, compare=False)

    @classmethod
    @_parser("PriorityClass")
    def parse(cls, obj: Mapping[str, Any]) -> PriorityClassView:
        return cls(
            name=str(_meta(obj).get("name", "")),
            value=_integer(obj.get("value") or None, 0, f"PriorityClass {_meta(obj).get('name', '')}: value"),
            global_default=bool(obj.get("globalDefault", False)),
            preemption_policy=str(obj.get("preemptionPolicy", "PreemptLowerPriority") or "PreemptLowerPriority"),
            raw=obj,
        )
