"""The ``kube`` backend of :class:`common.cluster.Cluster`: the official ``kubernetes`` client over HTTP.

Requests go through ``ApiClient`` (its configuration, TLS and token refresh) but with paths built
from :data:`common.kinds.KINDS` and plain dicts in and out.  Why not the generated typed APIs: one
code path serves core kinds and custom resources alike, unknown fields survive a round trip, and
the pods/binding response (which the generated models fail to deserialise) needs no special case.

Error mapping is the same as the in-memory backend: 404 NotFound, 409 Conflict, 410 Gone,
429 TooManyRequests, anything else ApiError with the HTTP status; an unreachable server is an
ApiError with status 503.  Watches end quietly when the server closes them or the connection
drops; :class:`~common.cluster.informer.KubeInformer` resumes from the last resourceVersion it saw and
relists on 410.
"""

from __future__ import annotations

import builtins
import http.client
import json
import logging
import os
import socket
import threading
from collections import OrderedDict
from collections.abc import Iterator, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

import urllib3
from kubernetes import client as kclient
from kubernetes import config as kconfig

from common.clock import Clock, SystemClock
from common.cluster import (
    ApiError,
    Conflict,
    EventRecord,
    Gone,
    Handler,
    ListResult,
    NotFound,
    TooManyRequests,
    WatchEvent,
    merge_conditions,
)
from common.cluster.informer import KubeInformer
from common.config import ConfigError
from common.kinds import KINDS, kind_info

__all__ = ["KubeCluster", "KubeInformer", "load_cluster", "credentials_source", "IN_CLUSTER",
           "EVENT_SERIES_WINDOW_SECONDS"]

log = logging.getLogger(__name__)

MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"  # built-in kinds only
_CONDITION_RETRIES = 5  # read-merge-write rounds of patch_conditions on a custom resource before giving up
EVENT_SERIES_WINDOW_SECONDS = 360.0  # isomorphic events within 6 min become one series, as kube's recorder does
_EVENT_CACHE = 4096
_EVENTS = "/apis/events.k8s.io/v1"
_EVENT_FIELDS = frozenset({"related", "deprecatedSource", "deprecatedFirstTimestamp", "deprecatedLastTimestamp"})
_TRANSPORT_ERRORS = (urllib3.exceptions.HTTPError, http.client.HTTPException, OSError)
_BY_STATUS: dict[int, type[ApiError]] = {404: NotFound, 409: Conflict, 410: Gone, 429: TooManyRequests}


def api_error(status: int, body: Any, fallback: str = "") -> ApiError:
    """The :mod:`common.cluster` error for an HTTP status and a ``Status`` body (dict, bytes or text)."""
    if isinstance(body, bytes | str):
        try:
            body = json.loads(body or b"{}")
        except ValueError:
            body = {"message": body.decode(errors="replace") if isinstance(body, bytes) else body}
    body = body if isinstance(body, Mapping) else {}
    message = str(body.get("message") or fallback or f"HTTP {status}")
    reason = str(body.get("reason") or "")
    cls = _BY_STATUS.get(status)
    if cls is not None:
        return cls(message, reason=reason)
    return ApiError(message, status=status, reason=reason)


def _micro_time(t: float) -> str:
    return datetime.fromtimestamp(t, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class _Stream:
    """One open watch response, closable from another thread (that is how an informer stops)."""

    def __init__(self, response: Any) -> None:
        self.response = response
        self.closed = False

    def close(self) -> None:
        """Close from any thread; a read blocked in another thread returns at once."""
        if self.closed:
            return
        self.closed = True
        shutdown = getattr(self.response, "shutdown", None)  # urllib3 >= 2.3 unblocks a pending read
        try:
            if shutdown is not None:
                shutdown()
        except (*_TRANSPORT_ERRORS, RuntimeError, ValueError):  # already released or never connected
            pass
        self._release()

    def _release(self) -> None:
        self.closed = True
        try:
            self.response.close()
        except (*_TRANSPORT_ERRORS, RuntimeError, ValueError):
            pass

    def lines(self) -> Iterator[bytes]:
        buf = b""
        try:
            for chunk in self.response.stream(65536, decode_content=True):
                buf += chunk
                while b"\n" in buf:
                    line, buf = buf.split(b"\n", 1)
                    if line.strip():
                        yield line
        except _TRANSPORT_ERRORS as exc:
            if not self.closed:
                log.info("watch connection dropped: %s", exc)
            return
        finally:
            self._release()
        if buf.strip():
            yield buf


class KubeCluster:
    """The API server through ``kubernetes.client.ApiClient``; safe to share between threads."""

    def __init__(
        self,
        api_client: kclient.ApiClient,
        *,
        component: str = "loadwise",
        instance: str | None = None,
        clock: Clock | None = None,
        request_timeout: float = 60.0,
    ) -> None:
        self.api = api_client
        self.component = component
        self.instance = instance or f"{component}-{socket.gethostname()}"
        self.clock: Clock = clock or SystemClock()
        self.request_timeout = request_timeout
        self.failed_events = 0
        self._series: OrderedDict[tuple[str, ...], tuple[str, str, int, float]] = OrderedDict()
        self._series_lock = threading.Lock()

    # -- plumbing -----------------------------------------------------------------------------------
    @staticmethod
    def path(kind: str, name: str | None = None, namespace: str | None = None, subresource: str = "") -> str:
        """The REST path of a collection or an object; a namespaced kind without namespace lists all."""
        info = kind_info(kind)
        p = "/api/v1" if not info.group else f"/apis/{info.group}/{info.version}"
        if info.namespaced and (namespace or name is not None):
            p += f"/namespaces/{quote(namespace or 'default', safe='')}"
        p += f"/{info.plural}"
        if name is not None:
            p += f"/{quote(name, safe='')}"
        if subresource:
            p += f"/{subresource}"
        return p

    def _open(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, str] | None = None,
        body: Any = None,
        content_type: str | None = None,
        read_timeout: float | None = None,
    ) -> Any:
        # The one place that touches the generated client's request plumbing: param_serialize (URL, query, auth
        # headers, body) and call_api (the raw response).  Their signatures changed in kubernetes 36, so the
        # dependency is pinned to the tested major versions (pyproject.toml) and tests/common/test_kube_client_pin.py
        # fails when they move.
        headers = {"Accept": "application/json"}
        if body is not None:
            headers["Content-Type"] = content_type or "application/json"
        _, url, headers, body, _ = self.api.param_serialize(
            method=method,
            resource_path=path,
            query_params=[(k, v) for k, v in (query or {}).items()],
            header_params=headers,
            body=body,
            auth_settings=["BearerToken"],
        )
        try:
            timeout = (10.0, read_timeout)
            return self.api.call_api(method, url, header_params=headers, body=body, _request_timeout=timeout)
        except _TRANSPORT_ERRORS as exc:
            raise ApiError(f"{method} {path}: API server unreachable: {exc}", status=503, reason="Unavailable") from exc

    def request(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, str] | None = None,
        body: Any = None,
        content_type: str | None = None,
    ) -> Any:
        """One API call; returns the decoded JSON body or raises the mapped :class:`ApiError`."""
        timeout = self.request_timeout
        resp = self._open(method, path, query=query, body=body, content_type=content_type, read_timeout=timeout)
        try:
            data = resp.read()
        except _TRANSPORT_ERRORS as exc:
            raise ApiError(f"{method} {path}: connection lost: {exc}", status=503, reason="Unavailable") from exc
        if resp.status >= 400:
            raise api_error(resp.status, data, f"{method} {path}: HTTP {resp.status}")
        return json.loads(data) if data else {}

    @staticmethod
    def _typed(kind: str, obj: dict[str, Any]) -> dict[str, Any]:
        info = kind_info(kind)
        obj.setdefault("apiVersion", info.api_version)
        obj.setdefault("kind", kind)
        return obj

    # -- reads --------------------------------------------------------------------------------------
    def list(
        self,
        kind: str,
        *,
        namespace: str | None = None,
        field_selector: str | None = None,
        label_selector: str | None = None,
        page_size: int = 500,
    ) -> ListResult:
        """All pages of a list; the resourceVersion is the consistent snapshot of the first page."""
        query: dict[str, str] = {}
        if field_selector:
            query["fieldSelector"] = field_selector
        if label_selector:
            query["labelSelector"] = label_selector
        items: builtins.list[dict[str, Any]] = []
        rv = ""
        token = ""
        while True:
            page = dict(query, limit=str(page_size)) if page_size else dict(query)
            if token:
                page["continue"] = token
            try:
                data = self.request("GET", self.path(kind, namespace=namespace), query=page)
            except Gone:
                if not token:
                    raise
                log.info("list %s: continue token expired, listing again without pages", kind)
                items, token, page_size = [], "", 0
                continue
            meta = data.get("metadata") or {}
            rv = rv or str(meta.get("resourceVersion") or "")
            items.extend(self._typed(kind, dict(o)) for o in data.get("items") or [])
            token = str(meta.get("continue") or "")
            if not token:
                return ListResult(items, rv)

    def get(self, kind: str, name: str, *, namespace: str | None = None) -> dict[str, Any]:
        return self._typed(kind, self.request("GET", self.path(kind, name, namespace)))

    def open_watch(
        self,
        kind: str,
        *,
        resource_version: str,
        namespace: str | None = None,
        field_selector: str | None = None,
        timeout_seconds: float | None = None,
    ) -> _Stream:
        query = {"watch": "true", "allowWatchBookmarks": "true"}
        if resource_version:
            query["resourceVersion"] = resource_version
        if field_selector:
            query["fieldSelector"] = field_selector
        read_timeout = None
        if timeout_seconds is not None:
            query["timeoutSeconds"] = str(max(0, int(timeout_seconds)))
            read_timeout = timeout_seconds + 30.0  # the server closes first; this only guards a stuck socket
        resp = self._open("GET", self.path(kind, namespace=namespace), query=query, read_timeout=read_timeout)
        if resp.status >= 400:
            try:
                data = resp.read()
            except _TRANSPORT_ERRORS:
                data = b""
            raise api_error(resp.status, data, f"watch {kind}: HTTP {resp.status}")
        return _Stream(resp.response)

    def events(self, kind: str, stream: _Stream) -> Iterator[WatchEvent]:
        """Decode a watch stream; an ``ERROR`` event becomes the mapped exception (410 -> Gone)."""
        for line in stream.lines():
            ev = json.loads(line)
            type_ = str(ev.get("type") or "")
            obj = ev.get("object") or {}
            if type_ == "ERROR":
                raise api_error(int(obj.get("code") or 500), obj, f"watch {kind}: error event")
            if type_ != "BOOKMARK":
                self._typed(kind, obj)
            yield WatchEvent(type_, obj)

    def watch(
        self,
        kind: str,
        *,
        resource_version: str,
        namespace: str | None = None,
        field_selector: str | None = None,
        timeout_seconds: float | None = None,
    ) -> Iterator[WatchEvent]:
        stream = self.open_watch(
            kind,
            resource_version=resource_version,
            namespace=namespace,
            field_selector=field_selector,
            timeout_seconds=timeout_seconds,
        )
        try:
            yield from self.events(kind, stream)
        finally:
            stream.close()

    # -- writes -------------------------------------------------------------------------------------
    def create(self, kind: str, obj: Mapping[str, Any]) -> dict[str, Any]:
        info = kind_info(kind)
        body = self._typed(kind, json.loads(json.dumps(obj)))
        meta = body.setdefault("metadata", {})
        if info.namespaced:
            meta["namespace"] = meta.get("namespace") or "default"
        else:
            meta.pop("namespace", None)
        return self._typed(kind, self.request("POST", self.path(kind, namespace=meta.get("namespace")), body=body))

    def replace(self, kind: str, obj: Mapping[str, Any]) -> dict[str, Any]:
        body = self._typed(kind, json.loads(json.dumps(obj)))
        meta = body.get("metadata") or {}
        path = self.path(kind, str(meta.get("name")), meta.get("namespace"))
        return self._typed(kind, self.request("PUT", path, body=body))

    def patch(self, kind: str, name: str, patch: Mapping[str, Any], *, namespace: str | None = None) -> dict[str, Any]:
        """Merge patch of everything but ``status`` (a subresource; see :meth:`patch_status`)."""
        body = {k: v for k, v in patch.items() if k != "status"}
        path = self.path(kind, name, namespace)
        return self._typed(kind, self.request("PATCH", path, body=body, content_type=MERGE_PATCH))

    def patch_status(
        self, kind: str, name: str, patch: Mapping[str, Any], *, namespace: str | None = None
    ) -> dict[str, Any]:
        body = {"status": patch.get("status") or {}}
        path = self.path(kind, name, namespace, "status")
        return self._typed(kind, self.request("PATCH", path, body=body, content_type=MERGE_PATCH))

    def patch_conditions(
        self,
        kind: str,
        name: str,
        conditions: Sequence[Mapping[str, Any]],
        *,
        namespace: str | None = None,
        status: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Conditions by type: a strategic merge patch for a kind of the core group, Pod or Node (``conditions``
        is merged by its ``type`` key on the server); for a custom resource, which takes no strategic merge patch
        (and any other group's kind, to be safe), the merged list
        is written with a merge patch that carries the resourceVersion it was merged into, so a concurrent writer
        makes it fail with 409 and it is merged again."""
        fields = {k: v for k, v in (status or {}).items() if k != "conditions"}
        path = self.path(kind, name, namespace, "status")
        if not kind_info(kind).group:
            body = {"status": dict(fields)}
            if conditions:  # an empty list would say nothing either; leave the server no room to read it otherwise
                body["status"]["conditions"] = [dict(c) for c in conditions]
            return self._typed(kind, self.request("PATCH", path, body=body, content_type=STRATEGIC_MERGE_PATCH))
        conflicts = 0
        while True:
            cur = self.get(kind, name, namespace=namespace)
            merged = merge_conditions((cur.get("status") or {}).get("conditions"), conditions)
            body = {"metadata": {"resourceVersion": (cur.get("metadata") or {}).get("resourceVersion")},
                    "status": {**fields, "conditions": merged}}
            try:
                return self._typed(kind, self.request("PATCH", path, body=body, content_type=MERGE_PATCH))
            except Conflict:
                conflicts += 1
                if conflicts >= _CONDITION_RETRIES:
                    raise

    def delete(self, kind: str, name: str, *, namespace: str | None = None) -> None:
        self.request("DELETE", self.path(kind, name, namespace))

    # -- subresources -------------------------------------------------------------------------------
    def bind(self, namespace: str, name: str, node: str, *, uid: str | None = None) -> None:
        """``pods/binding``; the uid, when given, is a precondition the API server checks."""
        ns = namespace or "default"
        meta: dict[str, Any] = {"name": name, "namespace": ns}
        if uid:
            meta["uid"] = uid
        target = {"apiVersion": "v1", "kind": "Node", "name": node}
        body = {"apiVersion": "v1", "kind": "Binding", "metadata": meta, "target": target}
        self.request("POST", self.path("Pod", name, ns, "binding"), body=body)

    def evict(self, namespace: str, name: str, *, grace_period_seconds: int | None = None) -> None:
        ns = namespace or "default"
        meta = {"name": name, "namespace": ns}
        body: dict[str, Any] = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": meta}
        if grace_period_seconds is not None:
            body["deleteOptions"] = {"gracePeriodSeconds": int(grace_period_seconds)}
        self.request("POST", self.path("Pod", name, ns, "eviction"), body=body)

    def emit_event(self, event: EventRecord) -> None:
        """Create an ``events.k8s.io/v1`` Event, or bump the series of an identical one from the last 6 minutes.

        Never raises: an event is a side note, so a refused write is logged and counted instead.
        """
        now = self.clock.now()
        info = KINDS.get(event.kind)
        ns = event.namespace if (info is None or info.namespaced) and event.namespace else "default"
        note = event.message.encode()[:1024].decode(errors="ignore")
        key = (event.kind, event.namespace, event.name, event.uid, event.type, event.reason, event.action, note)
        try:
            with self._series_lock:
                prev = self._series.get(key)
            if prev is not None and now - prev[3] <= EVENT_SERIES_WINDOW_SECONDS:
                ev_ns, ev_name, count, _ = prev
                try:
                    self._bump_series(ev_ns, ev_name, count + 1, now)
                    self._remember(key, (ev_ns, ev_name, count + 1, now))
                    return
                except NotFound:
                    pass  # the old event expired: start a new one
            ev_name = f"{event.name[:200]}.{int(now * 1e9):x}"
            self._create_event(event, ns, ev_name, note, now, info.api_version if info else "v1")
            self._remember(key, (ns, ev_name, 1, now))
        except ApiError as exc:
            self.failed_events += 1
            what = f"{event.type} {event.reason} on {event.kind} {ns}/{event.name}"
            log.warning("event %s not recorded: %s", what, exc)

    def _remember(self, key: tuple[str, ...], value: tuple[str, str, int, float]) -> None:
        with self._series_lock:
            self._series[key] = value
            self._series.move_to_end(key)
            while len(self._series) > _EVENT_CACHE:
                self._series.popitem(last=False)

    def _create_event(self, event: EventRecord, ns: str, name: str, note: str, now: float, api_version: str) -> None:
        ref: dict[str, Any] = {"apiVersion": api_version, "kind": event.kind, "name": event.name}
        if event.namespace and ns == event.namespace:
            ref["namespace"] = event.namespace
        if event.uid:
            ref["uid"] = event.uid
        body: dict[str, Any] = {
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "metadata": {"name": name, "namespace": ns},
            "eventTime": _micro_time(now),
            "reportingController": event.component,
            "reportingInstance": self.instance[:128],
            "action": (event.action or event.reason)[:128],
            "reason": event.reason[:128],
            "regarding": ref,
            "note": note,
            "type": event.type,
        }
        for k, v in event.extra.items():  # Event fields go in as they are, anything else as an annotation
            if k in _EVENT_FIELDS:
                body.setdefault(k, v)
            else:
                text = v if isinstance(v, str) else json.dumps(v, sort_keys=True)
                body["metadata"].setdefault("annotations", {})[f"loadwise.io/{k}"] = text
        self.request("POST", f"{_EVENTS}/namespaces/{quote(ns, safe='')}/events", body=body)

    def _bump_series(self, ns: str, name: str, count: int, now: float) -> None:
        path = f"{_EVENTS}/namespaces/{quote(ns, safe='')}/events/{quote(name, safe='')}"
        body = {"series": {"count": count, "lastObservedTime": _micro_time(now)}}
        self.request("PATCH", path, body=body, content_type=MERGE_PATCH)

    # -- informers ----------------------------------------------------------------------------------
    def informer(
        self,
        kind: str,
        handler: Handler,
        *,
        namespace: str | None = None,
        field_selector: str | None = None,
        shared: bool = False,
    ) -> KubeInformer:
        """See :meth:`common.cluster.Cluster.informer`; ``shared`` changes nothing: each informer decodes its own
        objects from the API server's JSON, so no other reader sees what its handler gets."""
        kind_info(kind)
        return KubeInformer(self, kind, handler, namespace=namespace, field_selector=field_selector)


IN_CLUSTER = "in-cluster service account"


def credentials_source(kubeconfig: str | None = None) -> str:
    """Where the credentials come from, in kubectl's order for a process that may run in a pod: the
    ``--kubeconfig`` file, else ``$KUBECONFIG`` (a list of files, merged as kubectl merges them), else the pod's
    service account, else ``~/.kube/config``; "" when there is none of these."""
    if kubeconfig:
        return kubeconfig
    if os.environ.get("KUBECONFIG"):
        return os.environ["KUBECONFIG"]
    if os.environ.get("KUBERNETES_SERVICE_HOST"):
        return IN_CLUSTER
    home = os.path.expanduser("~/.kube/config")
    return home if os.path.exists(home) else ""


def load_cluster(kubeconfig: str | None = None, **kwargs: Any) -> KubeCluster:
    """A :class:`KubeCluster` with the credentials :func:`credentials_source` names."""
    cfg = kclient.Configuration()
    where = credentials_source(kubeconfig) or IN_CLUSTER
    try:
        if where == IN_CLUSTER:
            kconfig.load_incluster_config(client_configuration=cfg)  # type: ignore[no-untyped-call]
        else:  # a file, or $KUBECONFIG's list of files (the client merges a path-separated list)
            kconfig.load_kube_config(  # type: ignore[no-untyped-call]
                config_file=where, client_configuration=cfg, persist_config=False
            )
    except (kconfig.ConfigException, OSError, TypeError, ValueError) as exc:
        raise ConfigError(f"cannot load Kubernetes credentials: {exc}", field="kubeconfig", source=where) from exc
    return KubeCluster(kclient.ApiClient(cfg), **kwargs)
