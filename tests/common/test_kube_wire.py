"""The ``kube`` backend over real HTTP: the official client against the kmock Kubernetes emulator.

kmock serves HTTP and routes requests; its emulator keeps objects but has no resourceVersions,
no watch-from-resourceVersion, no 410 and no subresources.  :class:`ApiState` adds exactly that as
kmock reactions: a resource-versioned store with history, merge patches, the status subresource,
pods/binding, pods/eviction with a PDB refusal, and the fault injection the tests need (dropped
watch connections, compaction -> 410 Gone, refused watches).  Every request stays recorded in
the kmock handler (iterate it) for assertions on paths, bodies and content types.
"""

from __future__ import annotations

import asyncio
import copy
import json
import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any

import kmock
import pytest
from kubernetes import client as kclient

from common.clock import FakeClock
from common.cluster import ApiError, Conflict, EventRecord, Gone, NotFound, TooManyRequests, WatchEvent, merge_patch
from common.cluster.kube import KubeCluster, KubeInformer, load_cluster
from common.config import ConfigError
from common.kinds import KINDS
from common.selectors import match_field_selector, parse_selector_string

pytestmark = pytest.mark.kmock

_STATUS_SUBRESOURCE = {"Pod", "Node", "NodeMetric", "WaterlinePolicy", "PodGroup", "Queue"}
_BY_PLURAL = {(k.group, k.plural): k for k in KINDS.values()}


def status(code: int, reason: str, message: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Status",
        "status": "Failure",
        "code": code,
        "reason": reason,
        "message": message,
    }


def fail(code: int, reason: str, message: str) -> kmock.Response:
    return kmock.Response(status=code, payload=status(code, reason, message))


def strategic_merge(target: Any, patch: Any) -> Any:
    """The API server's strategic merge patch, as far as the built-in kinds used here need it: maps merge as in a
    JSON merge patch, and a ``conditions`` list (merge key ``type`` on Pod and Node status) merges entry by entry,
    an entry of a new type appended; any other list is replaced."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = dict(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        elif k == "conditions" and isinstance(v, list):
            merged = [copy.deepcopy(c) for c in out.get(k) or []]
            for entry in v:
                at = next((i for i, c in enumerate(merged) if c.get("type") == entry["type"]), None)
                if at is None:
                    merged.append(strategic_merge({}, entry))
                else:
                    merged[at] = strategic_merge(merged[at], entry)
            out[k] = merged
        else:
            out[k] = strategic_merge(out.get(k), v)
    return out


class ApiState:
    """What the emulator lacks, as reactions: resourceVersions, history, 410, subresources."""

    def __init__(self) -> None:
        self.rv = 0
        self.objects: dict[tuple[str, str, str], dict[str, Any]] = {}  # (plural, ns, name)
        self.history: list[tuple[int, str, dict[str, Any]]] = []  # (rv, plural, event)
        self.compacted = 0  # watches from a resourceVersion below this get 410
        self.gone_as_http = False  # 410 as an HTTP status instead of an ERROR event
        self.drop_after: int | None = None  # abort the next watch connection after N events
        self.watch_refusal: int | None = None  # refuse watches with this HTTP status
        self.pdb_protected: set[str] = set()  # "ns/name" pods whose eviction a PDB refuses
        self.fail_events = False
        self._changed = asyncio.Event()
        self._generation = 0

    def install(self, server: Any) -> None:
        self.server = server
        for group in sorted({k.group for k in KINDS.values()} | {"events.k8s.io"}):
            server[kmock.resource(group=group)] << self.handle

    # -- state --------------------------------------------------------------------------------------
    def _wake(self) -> None:
        ev, self._changed = self._changed, asyncio.Event()
        ev.set()

    def close_watches(self) -> None:
        """End every open watch stream cleanly (as a server-side timeout would)."""
        self._generation += 1
        self._wake()

    def compact(self) -> None:
        self.compacted = self.rv
        self.history.clear()

    def _record(self, plural: str, type_: str, obj: dict[str, Any]) -> None:
        self.history.append(
            (int(obj["metadata"]["resourceVersion"]), plural, {"type": type_, "object": copy.deepcopy(obj)})
        )
        self._wake()

    def _store(self, plural: str, key: tuple[str, str, str], obj: dict[str, Any], type_: str) -> dict[str, Any]:
        self.rv += 1
        obj["metadata"]["resourceVersion"] = str(self.rv)
        self.objects[key] = obj
        self._record(plural, type_, obj)
        return obj

    def seed(self, kind: str, obj: dict[str, Any]) -> dict[str, Any]:
        info = KINDS[kind]
        obj = copy.deepcopy(obj)
        meta = obj.setdefault("metadata", {})
        ns = (meta.get("namespace") or "default") if info.namespaced else ""
        if ns:
            meta["namespace"] = ns
        meta.setdefault("uid", str(uuid.uuid4()))
        obj.update(apiVersion=info.api_version, kind=kind)
        # the emulator checks creates/patches/deletes against its own store first: keep it in step
        self.server.objects[kmock.resource(info.group, info.version, info.plural), ns or None, meta["name"]] = obj
        return self._store(info.plural, (info.plural, ns, meta["name"]), obj, "ADDED")

    def get(self, kind: str, name: str, namespace: str = "") -> dict[str, Any] | None:
        return self.objects.get((KINDS[kind].plural, namespace, name))

    # -- HTTP ---------------------------------------------------------------------------------------
    async def handle(self, req: kmock.Request) -> kmock.Response:
        out = await self._dispatch(req)
        # kmock copies the status of a returned Response onto the reaction itself, so every answer
        # must carry its own status or the previous one (say a 409) would stick to the next.
        return out if isinstance(out, kmock.Response) else kmock.Response(status=200, payload=out)

    async def _dispatch(self, req: kmock.Request) -> Any:
        res = req.resource
        assert res is not None
        info = _BY_PLURAL.get((res.group, res.plural))
        plural = str(res.plural)
        ns = req.namespace or ""
        method = req.method.value.upper()
        if plural == "events" and res.group == "events.k8s.io" and self.fail_events:
            return fail(500, "InternalError", "events are down")
        if req.name is None:
            if method == "GET" and req.params.get("watch") in ("true", "1"):
                return await self._watch(req, plural)
            if method == "GET":
                return self._list(req, plural)
            if method == "POST":
                return self._create(req, plural, ns, info.kind if info else "Event")
        else:
            key = (plural, ns, req.name)
            cur = self.objects.get(key)
            if cur is None:
                return fail(404, "NotFound", f'{plural} "{req.name}" not found')
            if req.subresource == "binding" and method == "POST":
                return self._bind(req, key, cur)
            if req.subresource == "eviction" and method == "POST":
                return self._evict(req, key, cur)
            if method == "GET":
                return cur
            if method == "PUT":
                return self._replace(req, key, cur)
            if method == "PATCH":
                return self._patch(req, key, cur, info.kind if info else "Event")
            if method == "DELETE":
                del self.objects[key]
                self.rv += 1
                gone = copy.deepcopy(cur)
                gone["metadata"]["resourceVersion"] = str(self.rv)
                self._record(plural, "DELETED", gone)
                return status(200, "", "deleted") | {"status": "Success"}
        return fail(405, "MethodNotAllowed", f"{method} {req.url.path}")

    def _list(self, req: kmock.Request, plural: str) -> dict[str, Any]:
        sel = parse_selector_string(req.params.get("labelSelector"))
        items = [
            {k: v for k, v in o.items() if k not in ("apiVersion", "kind")}  # a real server omits them per item
            for (p, ns, _), o in sorted(self.objects.items())
            if p == plural
            and (not req.namespace or ns == req.namespace)
            and match_field_selector(o, req.params.get("fieldSelector"))
            and sel.matches(o["metadata"].get("labels"))
        ]
        start = int(req.params.get("continue") or 0)
        limit = int(req.params.get("limit") or 0) or len(items) + 1
        page = items[start : start + limit]
        more = start + limit < len(items)
        return {
            "kind": "List",
            "apiVersion": "v1",
            "items": page,
            "metadata": {"resourceVersion": str(self.rv), "continue": str(start + limit) if more else ""},
        }

    async def _watch(self, req: kmock.Request, plural: str) -> Any:
        since = int(req.params.get("resourceVersion") or 0)
        if self.watch_refusal:
            return fail(self.watch_refusal, "ServiceUnavailable", "watches are paused")
        too_old = since < self.compacted
        if too_old and self.gone_as_http:
            return fail(410, "Expired", f"too old resource version: {since} ({self.compacted})")
        deadline = asyncio.get_running_loop().time() + float(req.params.get("timeoutSeconds") or 30)
        drop_after, self.drop_after = self.drop_after, None
        generation = self._generation

        async def stream() -> AsyncIterator[Any]:
            yield b""  # send the headers now
            if too_old:
                yield {"type": "ERROR", "object": status(410, "Expired", f"too old resource version: {since}")}
                return
            last, sent = since, 0
            while generation == self._generation:
                for rv, p, ev in list(self.history):
                    obj = ev["object"]
                    if rv <= last or p != plural:
                        continue
                    if req.namespace and obj["metadata"].get("namespace") != req.namespace:
                        continue
                    last = rv
                    if not match_field_selector(obj, req.params.get("fieldSelector")):
                        continue
                    yield ev
                    sent += 1
                    if drop_after is not None and sent >= drop_after:
                        await asyncio.sleep(0.05)  # let the event leave before the connection dies
                        raw = req._raw_request
                        assert raw is not None and raw.transport is not None
                        raw.transport.abort()
                        return
                remaining = deadline - asyncio.get_running_loop().time()
                if remaining <= 0:
                    return
                try:
                    await asyncio.wait_for(self._changed.wait(), remaining)
                except TimeoutError:
                    return

        return kmock.Response(status=200, payload=stream())

    def _create(self, req: kmock.Request, plural: str, ns: str, kind: str) -> Any:
        obj = copy.deepcopy(req.data)
        meta = obj.setdefault("metadata", {})
        key = (plural, ns, meta.get("name", ""))
        if key in self.objects:
            return fail(409, "AlreadyExists", f'{plural} "{key[2]}" already exists')
        meta.setdefault("uid", str(uuid.uuid4()))
        meta["creationTimestamp"] = "2024-01-01T00:00:00Z"
        return kmock.Response(status=201, payload=self._store(plural, key, obj, "ADDED"))

    def _replace(self, req: kmock.Request, key: tuple[str, str, str], cur: dict[str, Any]) -> Any:
        new = copy.deepcopy(req.data)
        if new["metadata"].get("resourceVersion") != cur["metadata"]["resourceVersion"]:
            return fail(
                409, "Conflict", f'Operation cannot be fulfilled on {key[0]} "{key[2]}": the object has been modified'
            )
        new["metadata"] = {**cur["metadata"], **new["metadata"]}
        return self._store(key[0], key, new, "MODIFIED")

    def _patch(self, req: kmock.Request, key: tuple[str, str, str], cur: dict[str, Any], kind: str) -> Any:
        content_type = req.headers.get("Content-Type")
        strategic = content_type == "application/strategic-merge-patch+json"
        if not (content_type == "application/merge-patch+json" or (strategic and not KINDS[kind].group)):
            # as the API server: custom resources take no strategic merge patch
            return fail(415, "UnsupportedMediaType", str(content_type))
        body = dict(req.data)
        rv = (body.get("metadata") or {}).get("resourceVersion")
        if rv is not None and rv != cur["metadata"]["resourceVersion"]:  # a patch may carry a precondition
            return fail(409, "Conflict", f'Operation cannot be fulfilled on {key[0]} "{key[2]}": the object has been '
                                         "modified")
        merge = strategic_merge if strategic else merge_patch
        if req.subresource == "status":
            new = copy.deepcopy(cur)
            new["status"] = merge(cur.get("status") or {}, body.get("status") or {})
        else:
            if kind in _STATUS_SUBRESOURCE:
                body.pop("status", None)  # the main resource ignores status, as the API server does
            new = merge(cur, body)
        return self._store(key[0], key, new, "MODIFIED")

    def _bind(self, req: kmock.Request, key: tuple[str, str, str], cur: dict[str, Any]) -> Any:
        body = req.data
        assert body["kind"] == "Binding" and body["target"]["kind"] == "Node"
        uid = body["metadata"].get("uid")
        if uid and uid != cur["metadata"]["uid"]:
            return fail(409, "Conflict", "Precondition failed: UID in precondition does not match")
        if cur.get("spec", {}).get("nodeName"):
            return fail(409, "Conflict", f'pod {key[2]} is already assigned to node "{cur["spec"]["nodeName"]}"')
        new = copy.deepcopy(cur)
        new["spec"]["nodeName"] = body["target"]["name"]
        self._store(key[0], key, new, "MODIFIED")
        return kmock.Response(status=201, payload=status(201, "", "") | {"status": "Success"})

    def _evict(self, req: kmock.Request, key: tuple[str, str, str], cur: dict[str, Any]) -> Any:
        body = req.data
        assert body["apiVersion"] == "policy/v1" and body["kind"] == "Eviction"
        if f"{key[1]}/{key[2]}" in self.pdb_protected:
            return fail(429, "TooManyRequests", "Cannot evict pod as it would violate the pod's disruption budget.")
        del self.objects[key]
        self.rv += 1
        gone = copy.deepcopy(cur)
        gone["metadata"]["resourceVersion"] = str(self.rv)
        self._record(key[0], "DELETED", gone)
        return kmock.Response(status=201, payload=status(201, "", "") | {"status": "Success"})


@pytest.fixture
async def api(kmock: Any) -> ApiState:
    state = ApiState()
    state.install(kmock)
    return state


@pytest.fixture
def cluster(kmock: Any) -> KubeCluster:
    cfg = kclient.Configuration(host=str(kmock.url).rstrip("/"))
    return KubeCluster(kclient.ApiClient(cfg), component="loadwise-test", instance="test-0", clock=FakeClock())


def node(name: str, **labels: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": labels}, "status": {"allocatable": {"cpu": "4", "memory": "8Gi"}}}


def pod(name: str, node_name: str = "", ns: str = "ns") -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "busybox"}]}
    if node_name:
        spec["nodeName"] = node_name
    return {"metadata": {"name": name, "namespace": ns}, "spec": spec}


async def eventually(cond: Callable[[], bool], timeout: float = 5.0) -> None:
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while not cond():
        if loop.time() > end:
            raise AssertionError("condition not reached in time")
        await asyncio.sleep(0.02)


def names(events: list[WatchEvent]) -> list[tuple[str, str]]:
    return [(e.type, e.object["metadata"]["name"]) for e in events]


def requests_to(server: Any, fragment: str) -> list[kmock.Request]:
    return [r for r in server if fragment in r.url.path]  # iterating the handler yields every request


# -- plain calls ------------------------------------------------------------------------------------
async def test_create_get_replace_patch_delete_and_error_mapping(
    kmock: Any, api: ApiState, cluster: KubeCluster
) -> None:
    created = await asyncio.to_thread(cluster.create, "Node", node("n1", zone="a"))
    assert created["kind"] == "Node" and created["metadata"]["resourceVersion"] == "1"
    with pytest.raises(Conflict) as dup:
        await asyncio.to_thread(cluster.create, "Node", node("n1"))
    assert dup.value.status == 409 and dup.value.reason  # the emulator's own duplicate check answers
    got = await asyncio.to_thread(cluster.get, "Node", "n1")
    assert got["metadata"]["labels"] == {"zone": "a"}

    got["metadata"]["labels"]["zone"] = "b"
    replaced = await asyncio.to_thread(cluster.replace, "Node", got)
    assert replaced["metadata"]["resourceVersion"] == "2"
    with pytest.raises(Conflict):  # the same stale copy again
        await asyncio.to_thread(cluster.replace, "Node", got)

    patched = await asyncio.to_thread(
        cluster.patch, "Node", "n1", {"metadata": {"labels": {"zone": None, "pool": "x"}}, "status": {"phase": "Gone"}}
    )
    assert patched["metadata"]["labels"] == {"pool": "x"}
    assert "phase" not in patched["status"]  # status goes through patch_status only
    (last_patch,) = [r for r in requests_to(kmock, "/api/v1/nodes/n1") if r.method.value.upper() == "PATCH"]
    assert last_patch.headers["Content-Type"] == "application/merge-patch+json"
    assert "status" not in last_patch.data

    await asyncio.to_thread(cluster.delete, "Node", "n1")
    with pytest.raises(NotFound):
        await asyncio.to_thread(cluster.get, "Node", "n1")
    with pytest.raises(NotFound):
        await asyncio.to_thread(cluster.patch, "Node", "n1", {"metadata": {"labels": {"a": "b"}}})


async def test_list_follows_pages_and_passes_selectors(kmock: Any, api: ApiState, cluster: KubeCluster) -> None:
    for i in range(5):
        api.seed("Pod", pod(f"p{i}", node_name="n1" if i % 2 == 0 else "n2"))
    api.seed("Pod", pod("other", ns="ns2"))
    res = await asyncio.to_thread(cluster.list, "Pod", namespace="ns", page_size=2)
    assert [o["metadata"]["name"] for o in res.items] == ["p0", "p1", "p2", "p3", "p4"]
    assert all(o["kind"] == "Pod" and o["apiVersion"] == "v1" for o in res.items)
    assert res.resource_version == "6"
    pages = requests_to(kmock, "/api/v1/namespaces/ns/pods")
    assert [r.params.get("continue", "") for r in pages] == ["", "2", "4"]

    on_n1 = await asyncio.to_thread(cluster.list, "Pod", field_selector="spec.nodeName=n1")
    assert sorted(o["metadata"]["name"] for o in on_n1.items) == ["p0", "p2", "p4"]
    assert requests_to(kmock, "/api/v1/pods")[-1].params["fieldSelector"] == "spec.nodeName=n1"


# -- watches ----------------------------------------------------------------------------------------
async def test_watch_resumes_from_resource_version(api: ApiState, cluster: KubeCluster) -> None:
    api.seed("Node", node("n1"))
    rv = (await asyncio.to_thread(cluster.list, "Node")).resource_version
    api.seed("Node", node("n2"))
    api.seed("Node", node("n3"))

    def collect(since: str) -> list[WatchEvent]:
        return list(cluster.watch("Node", resource_version=since, timeout_seconds=0.3))

    first = await asyncio.to_thread(collect, rv)
    assert names(first) == [("ADDED", "n2"), ("ADDED", "n3")]
    assert all(e.object["kind"] == "Node" for e in first)
    api.seed("Node", node("n4"))
    resumed = await asyncio.to_thread(collect, first[-1].object["metadata"]["resourceVersion"])
    assert names(resumed) == [("ADDED", "n4")]


async def test_watch_from_a_compacted_version_raises_gone(api: ApiState, cluster: KubeCluster) -> None:
    api.seed("Node", node("n1"))
    api.seed("Node", node("n2"))
    api.compact()
    with pytest.raises(Gone):  # as an ERROR event inside a 200 stream
        await asyncio.to_thread(lambda: list(cluster.watch("Node", resource_version="1", timeout_seconds=1)))
    api.gone_as_http = True
    with pytest.raises(Gone):  # as a plain HTTP 410
        await asyncio.to_thread(lambda: list(cluster.watch("Node", resource_version="1", timeout_seconds=1)))


def start_informer(cluster: KubeCluster, kind: str, seen: list[WatchEvent], **kw: Any) -> KubeInformer:
    inf = KubeInformer(cluster, kind, seen.append, backoff=0.05, max_backoff=0.2, **kw)
    inf.start()
    return inf


async def test_informer_survives_a_dropped_watch_connection(kmock: Any, api: ApiState, cluster: KubeCluster) -> None:
    api.seed("Node", node("n1"))
    seen: list[WatchEvent] = []
    inf = start_informer(cluster, "Node", seen)
    try:
        await eventually(inf.has_synced)
        await eventually(lambda: len(requests_to(kmock, "/api/v1/nodes")) >= 2)  # list + watch open
        api.drop_after = 1  # the watch opened next dies after one event ...
        api.close_watches()  # ... so end the current one (a server timeout)
        await eventually(lambda: inf.watches >= 2)
        api.seed("Node", node("n2"))  # delivered, then the connection is aborted
        api.seed("Node", node("n3"))  # sent after the drop: must come via the resumed watch
        await eventually(lambda: len(seen) == 3)
        await asyncio.sleep(0.1)
        assert names(seen) == [("ADDED", "n1"), ("ADDED", "n2"), ("ADDED", "n3")]  # nothing twice, nothing lost
        assert inf.lists == 1 and inf.watches >= 3 and inf.errors == 0  # a drop is not an error
        watches = [r for r in requests_to(kmock, "/api/v1/nodes") if r.params.get("watch") == "true"]
        assert watches[1].params["resourceVersion"] == "1"
        assert watches[2].params["resourceVersion"] == seen[1].object["metadata"]["resourceVersion"]
        assert watches[0].params["allowWatchBookmarks"] == "true"
    finally:
        await asyncio.to_thread(inf.stop)


async def test_informer_relists_on_410_and_delivers_the_gap(api: ApiState, cluster: KubeCluster) -> None:
    api.seed("Node", node("n1"))
    api.seed("Node", node("n2"))
    seen: list[WatchEvent] = []
    inf = start_informer(cluster, "Node", seen)
    try:
        await eventually(lambda: inf.has_synced() and inf.watches >= 1)
        api.watch_refusal = 503  # the watch breaks and cannot be reopened for a while
        api.close_watches()
        await eventually(lambda: inf.errors >= 1)
        n2 = copy.deepcopy(api.get("Node", "n2"))
        assert n2 is not None
        del api.objects[("nodes", "", "n1")]  # all of this happens while the informer is blind
        n2["metadata"]["labels"] = {"changed": "yes"}
        api._store("nodes", ("nodes", "", "n2"), n2, "MODIFIED")
        api.seed("Node", node("n3"))
        api.compact()
        api.watch_refusal = None
        await eventually(lambda: inf.lists >= 2)
        await eventually(lambda: len(seen) >= 5)
        assert names(seen) == [("ADDED", "n1"), ("ADDED", "n2"), ("DELETED", "n1"), ("MODIFIED", "n2"), ("ADDED", "n3")]
        assert seen[3].object["metadata"]["labels"] == {"changed": "yes"}
        assert sorted(o["metadata"]["name"] for o in inf.items()) == ["n2", "n3"]
        api.seed("Node", node("n4"))  # and the new watch carries on from the relist
        await eventually(lambda: len(seen) == 6)
        assert names(seen)[-1] == ("ADDED", "n4")
    finally:
        await asyncio.to_thread(inf.stop)


async def test_informer_filters_by_field_selector_and_stops_promptly(api: ApiState, cluster: KubeCluster) -> None:
    api.seed("Pod", pod("a", node_name="n1"))
    api.seed("Pod", pod("b", node_name="n2"))
    seen: list[WatchEvent] = []
    inf = start_informer(cluster, "Pod", seen, field_selector="spec.nodeName=n1")
    await eventually(lambda: inf.has_synced() and inf.watches >= 1)
    api.seed("Pod", pod("c", node_name="n1"))
    api.seed("Pod", pod("d", node_name="n2"))
    await eventually(lambda: len(seen) == 2)
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    await asyncio.to_thread(inf.stop)
    assert loop.time() - t0 < 2.0  # the blocked read is shut down, not waited out
    api.seed("Pod", pod("e", node_name="n1"))
    await asyncio.sleep(0.1)
    assert names(seen) == [("ADDED", "a"), ("ADDED", "c")]


async def test_patch_conditions_on_a_core_kind_is_astrategic_merge(
    kmock: Any, api: ApiState, cluster: KubeCluster
) -> None:
    """Only the writer's own condition travels; the server merges it by type, so the kubelet's stay as they are."""
    ready = {"type": "Ready", "status": "True", "reason": "KubeletReady", "lastHeartbeatTime": "2024-01-01T00:00:00Z"}
    mine = {"type": "loadwise.io/Interference", "status": "True", "reason": "WaterlineExceeded", "message": "old",
            "extra": "x"}
    api.seed("Node", {"metadata": {"name": "n1"}, "status": {"conditions": [ready, mine]}})
    new = {"type": "loadwise.io/Interference", "status": "False", "reason": "InterferenceCleared", "message": "ok",
           "extra": None}
    out = await asyncio.to_thread(cluster.patch_conditions, "Node", "n1", [new])
    assert out["status"]["conditions"] == [
        ready, {"type": "loadwise.io/Interference", "status": "False", "reason": "InterferenceCleared", "message": "ok"}
    ]
    (req,) = [r for r in requests_to(kmock, "/api/v1/nodes/n1/status") if r.method.value.upper() == "PATCH"]
    assert req.headers["Content-Type"] == "application/strategic-merge-patch+json"
    assert req.data == {"status": {"conditions": [new]}}
    assert not [r for r in requests_to(kmock, "/api/v1/nodes/n1") if r.method.value.upper() == "GET"]

    # other status fields ride along; a condition of a new type is appended
    pod = api.seed("Pod", {"metadata": {"name": "p"}, "spec": {"containers": []},
                           "status": {"phase": "Pending", "conditions": [{"type": "Other", "status": "True"}]}})
    sched = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}
    got = await asyncio.to_thread(cluster.patch_conditions, "Pod", "p", [sched], namespace="default",
                                  status={"nominatedNodeName": "n1"})
    assert got["status"] == {"phase": "Pending", "nominatedNodeName": "n1",
                             "conditions": [{"type": "Other", "status": "True"}, sched]}
    assert int(got["metadata"]["resourceVersion"]) > int(pod["metadata"]["resourceVersion"])
    # only fields: no conditions list is sent at all
    await asyncio.to_thread(cluster.patch_conditions, "Pod", "p", [], namespace="default",
                            status={"nominatedNodeName": "n2"})
    last = [r for r in requests_to(kmock, "/pods/p/status") if r.method.value.upper() == "PATCH"][-1]
    assert last.data == {"status": {"nominatedNodeName": "n2"}}


async def test_patch_conditions_on_a_custom_resource_merges_again_after_a_conflict(
    kmock: Any, api: ApiState, cluster: KubeCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A custom resource takes no strategic merge patch: the merged list goes with the resourceVersion it was
    merged into, and a writer that got in between makes it read and merge again rather than lose that write."""
    other = {"type": "Other", "status": "True"}
    api.seed("WaterlinePolicy", {"metadata": {"name": "w"}, "spec": {}, "status": {"conditions": [other]}})
    real_get = cluster.get
    reads = 0

    def get_then_race(kind: str, name: str, *, namespace: str | None = None) -> dict[str, Any]:
        nonlocal reads
        got = real_get(kind, name, namespace=namespace)
        reads += 1
        if reads == 1:  # another agent writes its condition between this read and the patch
            cur = copy.deepcopy(api.get("WaterlinePolicy", "w"))
            assert cur is not None
            cur["status"]["conditions"].append({"type": "Theirs", "status": "True"})
            api.seed("WaterlinePolicy", cur)
        return got

    monkeypatch.setattr(cluster, "get", get_then_race)
    mine = {"type": "Valid", "status": "True", "reason": "Valid"}
    out = await asyncio.to_thread(cluster.patch_conditions, "WaterlinePolicy", "w", [mine])
    assert [c["type"] for c in out["status"]["conditions"]] == ["Other", "Theirs", "Valid"]
    assert reads == 2
    patches_sent = [r for r in requests_to(kmock, "/waterlinepolicies/w/status") if r.method.value.upper() == "PATCH"]
    assert [r.headers["Content-Type"] for r in patches_sent] == ["application/merge-patch+json"] * 2
    assert all(r.data["metadata"]["resourceVersion"] for r in patches_sent)

    # a writer that always gets in between: the conflict is raised after a bounded number of rounds
    reads = 0

    def always_race(kind: str, name: str, *, namespace: str | None = None) -> dict[str, Any]:
        nonlocal reads
        got = real_get(kind, name, namespace=namespace)
        reads += 1
        cur = copy.deepcopy(api.get("WaterlinePolicy", "w"))
        assert cur is not None
        api.seed("WaterlinePolicy", cur)
        return got

    monkeypatch.setattr(cluster, "get", always_race)
    with pytest.raises(Conflict):
        await asyncio.to_thread(cluster.patch_conditions, "WaterlinePolicy", "w", [mine])
    assert reads == 5


async def teststrategic_merge_patch_is_refused_for_custom_resources(
    kmock: Any, api: ApiState, cluster: KubeCluster
) -> None:
    """The emulator refuses what the API server refuses, so the CRD path above is the only one that can work."""
    api.seed("WaterlinePolicy", {"metadata": {"name": "w"}, "spec": {}})
    with pytest.raises(ApiError) as err:
        await asyncio.to_thread(cluster.request, "PATCH", cluster.path("WaterlinePolicy", "w", None, "status"),
                                body={"status": {}}, content_type="application/strategic-merge-patch+json")
    assert err.value.status == 415


# -- subresources -----------------------------------------------------------------------------------
async def test_status_patch_on_a_custom_resource(kmock: Any, api: ApiState, cluster: KubeCluster) -> None:
    spec = {"metricCollectPolicy": {"aggregateDurationSeconds": 300, "reportIntervalSeconds": 60}}
    await asyncio.to_thread(cluster.create, "NodeMetric", {"metadata": {"name": "n1"}, "spec": spec})
    usage = {
        "nodeMetric": {"nodeUsage": {"resources": {"cpu": "1500m", "memory": "2Gi"}}},
        "updateTime": "2024-01-01T00:00:00Z",
    }
    out = await asyncio.to_thread(cluster.patch_status, "NodeMetric", "n1", {"status": usage})
    assert out["status"] == usage and out["spec"] == spec
    (req,) = requests_to(kmock, "/apis/slo.loadwise.io/v1alpha1/nodemetrics/n1/status")
    assert req.method.value.upper() == "PATCH"
    assert req.headers["Content-Type"] == "application/merge-patch+json"
    assert req.data == {"status": usage}
    again = await asyncio.to_thread(
        cluster.patch_status, "NodeMetric", "n1", {"status": {"nodeMetric": {"nodeUsage": {"resources": {"cpu": "2"}}}}}
    )
    assert again["status"]["nodeMetric"]["nodeUsage"]["resources"] == {"cpu": "2", "memory": "2Gi"}  # merged
    queue = await asyncio.to_thread(cluster.create, "Queue", {"metadata": {"name": "q"}, "spec": {"weight": 2}})
    assert queue["apiVersion"] == "scheduling.loadwise.io/v1alpha1"
    pg = await asyncio.to_thread(
        cluster.create, "PodGroup", {"metadata": {"name": "g", "namespace": "ns"}, "spec": {"minMember": 2}}
    )
    await asyncio.to_thread(cluster.patch_status, "PodGroup", "g", {"status": {"phase": "Inqueue"}}, namespace="ns")
    assert requests_to(kmock, "/apis/scheduling.loadwise.io/v1alpha1/namespaces/ns/podgroups/g/status")
    assert api.get("PodGroup", "g", "ns")["status"] == {"phase": "Inqueue"}  # type: ignore[index]
    assert pg["metadata"]["namespace"] == "ns"
    with pytest.raises(NotFound):
        await asyncio.to_thread(cluster.patch_status, "NodeMetric", "missing", {"status": usage})


async def test_bind_sets_the_node_once(kmock: Any, api: ApiState, cluster: KubeCluster) -> None:
    api.seed("Node", node("n1"))
    p = api.seed("Pod", pod("web"))
    with pytest.raises(Conflict):
        await asyncio.to_thread(cluster.bind, "ns", "web", "n1", uid="not-the-uid")
    await asyncio.to_thread(cluster.bind, "ns", "web", "n1", uid=p["metadata"]["uid"])
    assert api.get("Pod", "web", "ns")["spec"]["nodeName"] == "n1"  # type: ignore[index]
    req = requests_to(kmock, "/api/v1/namespaces/ns/pods/web/binding")[-1]
    assert req.data["target"] == {"apiVersion": "v1", "kind": "Node", "name": "n1"}
    assert req.data["metadata"]["uid"] == p["metadata"]["uid"]
    with pytest.raises(Conflict):
        await asyncio.to_thread(cluster.bind, "ns", "web", "n1")
    with pytest.raises(NotFound):
        await asyncio.to_thread(cluster.bind, "ns", "nope", "n1")


async def test_evict_through_the_eviction_api(kmock: Any, api: ApiState, cluster: KubeCluster) -> None:
    api.seed("Pod", pod("batch", node_name="n1"))
    api.seed("Pod", pod("guarded", node_name="n1"))
    api.pdb_protected.add("ns/guarded")
    await asyncio.to_thread(cluster.evict, "ns", "batch", grace_period_seconds=5)
    assert api.get("Pod", "batch", "ns") is None
    req = requests_to(kmock, "/api/v1/namespaces/ns/pods/batch/eviction")[-1]
    assert req.data == {
        "apiVersion": "policy/v1",
        "kind": "Eviction",
        "metadata": {"name": "batch", "namespace": "ns"},
        "deleteOptions": {"gracePeriodSeconds": 5},
    }
    with pytest.raises(TooManyRequests) as refused:
        await asyncio.to_thread(cluster.evict, "ns", "guarded")
    assert refused.value.status == 429 and "disruption budget" in str(refused.value)
    assert api.get("Pod", "guarded", "ns") is not None
    with pytest.raises(NotFound):
        await asyncio.to_thread(cluster.evict, "ns", "batch")


async def test_events_are_created_then_counted_as_a_series(kmock: Any, api: ApiState, cluster: KubeCluster) -> None:
    ev = EventRecord(
        kind="Pod",
        name="web",
        namespace="ns",
        reason="FailedScheduling",
        message="0/2 nodes are available",
        type="Warning",
        uid="u1",
        component="loadwise-scheduler",
        action="Scheduling",
    )
    await asyncio.to_thread(cluster.emit_event, ev)
    await asyncio.to_thread(cluster.emit_event, ev)
    posts = [
        r for r in requests_to(kmock, "/apis/events.k8s.io/v1/namespaces/ns/events") if r.method.value.upper() == "POST"
    ]
    assert len(posts) == 1
    body = posts[0].data
    assert body["regarding"] == {"apiVersion": "v1", "kind": "Pod", "name": "web", "namespace": "ns", "uid": "u1"}
    assert (body["reason"], body["note"], body["type"], body["action"]) == (
        "FailedScheduling",
        ev.message,
        "Warning",
        "Scheduling",
    )
    assert body["reportingController"] == "loadwise-scheduler" and body["reportingInstance"] == "test-0"
    assert body["eventTime"].endswith("Z")
    stored = api.get("Event", body["metadata"]["name"], "ns")
    assert stored is not None and stored["series"]["count"] == 2

    node_ev = EventRecord(
        kind="Node",
        name="n1",
        namespace="",
        reason="WaterlineTriggered",
        message="cpu over 80%",
        extra={"related": {"kind": "Pod", "name": "victim", "namespace": "ns"}, "rule": "colocation.cpu"},
    )
    await asyncio.to_thread(cluster.emit_event, node_ev)  # cluster-scoped objects: events go to "default"
    (node_post,) = requests_to(kmock, "/apis/events.k8s.io/v1/namespaces/default/events")
    assert "namespace" not in node_post.data["regarding"]
    assert node_post.data["related"] == {"kind": "Pod", "name": "victim", "namespace": "ns"}
    assert node_post.data["metadata"]["annotations"] == {"loadwise.io/rule": "colocation.cpu"}

    api.fail_events = True  # an event is a side note: a refusal is counted, never raised
    await asyncio.to_thread(
        cluster.emit_event, EventRecord(kind="Pod", name="x", namespace="ns", reason="R", message="m")
    )
    assert cluster.failed_events == 1


async def test_lease_update_with_optimistic_concurrency(api: ApiState, cluster: KubeCluster) -> None:
    spec = {
        "holderIdentity": "a",
        "leaseDurationSeconds": 15,
        "renewTime": "2024-01-01T00:00:00.000000Z",
        "leaseTransitions": 0,
    }
    lease = {"metadata": {"name": "loadwise-scheduler", "namespace": "loadwise-system"}, "spec": spec}
    await asyncio.to_thread(cluster.create, "Lease", lease)
    mine = await asyncio.to_thread(cluster.get, "Lease", "loadwise-scheduler", namespace="loadwise-system")
    theirs = copy.deepcopy(mine)
    mine["spec"]["renewTime"] = "2024-01-01T00:00:02.000000Z"
    renewed = await asyncio.to_thread(cluster.replace, "Lease", mine)
    assert int(renewed["metadata"]["resourceVersion"]) > int(theirs["metadata"]["resourceVersion"])
    theirs["spec"].update(holderIdentity="b", leaseTransitions=1)
    with pytest.raises(Conflict):  # b read before a renewed: b's takeover must fail
        await asyncio.to_thread(cluster.replace, "Lease", theirs)
    final = api.get("Lease", "loadwise-scheduler", "loadwise-system")
    assert final is not None and final["spec"]["holderIdentity"] == "a"


# -- configuration and transport --------------------------------------------------------------------
async def test_load_cluster_from_kubeconfig(kmock: Any, api: ApiState, tmp_path: Any) -> None:
    api.seed("Node", node("n1"))
    cfg = {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": "t",
        "clusters": [{"name": "t", "cluster": {"server": str(kmock.url).rstrip("/")}}],
        "users": [{"name": "u", "user": {"token": "secret-token"}}],
        "contexts": [{"name": "t", "context": {"cluster": "t", "user": "u"}}],
    }
    path = tmp_path / "kubeconfig"
    path.write_text(json.dumps(cfg))
    c = load_cluster(str(path))
    res = await asyncio.to_thread(c.list, "Node")
    assert [o["metadata"]["name"] for o in res.items] == ["n1"]
    assert requests_to(kmock, "/api/v1/nodes")[-1].headers["Authorization"] == "Bearer secret-token"
    with pytest.raises(ConfigError) as missing:
        load_cluster(str(tmp_path / "absent"))
    assert missing.value.field == "kubeconfig"


def test_load_cluster_outside_a_pod_names_the_problem(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    with pytest.raises(ConfigError) as err:
        load_cluster(None)
    assert "in-cluster" in str(err.value)


def test_unreachable_server_is_an_api_error() -> None:
    c = KubeCluster(kclient.ApiClient(kclient.Configuration(host="http://127.0.0.1:9")), request_timeout=2)
    c.api.configuration.retries = 0
    with pytest.raises(ApiError) as err:
        c.list("Node")
    assert err.value.status == 503
