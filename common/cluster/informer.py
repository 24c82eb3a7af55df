"""The ``kube`` backend's informer: list, then watch from the list's resourceVersion, resuming and relisting.

It talks to the API server only through :class:`~common.cluster.kube.KubeCluster`'s ``list``, ``open_watch`` and
``events``, so the request building and error mapping live in one place.
"""

from __future__ import annotations

import builtins
import logging
import random
import threading
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from common.backoff import Backoff
from common.cluster import ApiError, Gone, Handler, WatchEvent

if TYPE_CHECKING:
    from common.cluster.kube import KubeCluster, _Stream

__all__ = ["KubeInformer"]

log = logging.getLogger(__name__)


def _rv(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("resourceVersion") or "")


def _key(obj: Mapping[str, Any]) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return (str(meta.get("namespace") or ""), str(meta.get("name") or ""))


class KubeInformer:
    """List, then watch from the list's resourceVersion, in a daemon thread.

    The handler runs on that thread.  A watch that ends (server timeout, dropped connection) is
    reopened from the last resourceVersion seen, so nothing is skipped; a 410 Gone relists and
    delivers the difference against what the handler already saw (ADDED / MODIFIED for changed
    objects, DELETED for vanished ones), so no deletion is lost in the gap.  Errors back off
    exponentially (``backoff`` seconds doubling up to ``max_backoff``).
    """

    def __init__(
        self,
        cluster: KubeCluster,
        kind: str,
        handler: Handler,
        *,
        namespace: str | None = None,
        field_selector: str | None = None,
        watch_timeout: float = 300.0,
        backoff: float = 0.2,
        max_backoff: float = 30.0,
    ) -> None:
        self.cluster, self.kind, self.handler = cluster, kind, handler
        self.namespace, self.field_selector = namespace, field_selector
        self.watch_timeout, self.backoff, self.max_backoff = watch_timeout, backoff, max_backoff
        self._backoff = Backoff(backoff, max_backoff, jitter=0.2)
        self._rng = random.Random()
        self.resource_version = ""
        self.lists = 0  # how many times it listed (1 + relists after 410)
        self.watches = 0  # how many watch requests it opened
        self.errors = 0
        self._store: dict[tuple[str, str], dict[str, Any]] = {}
        self._stop = threading.Event()
        self._synced = threading.Event()
        self._stream: _Stream | None = None
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name=f"informer-{self.kind}", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        with self._lock:
            if self._stream is not None:
                self._stream.close()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=10)

    def has_synced(self) -> bool:
        return self._synced.is_set()

    def wait_for_sync(self, timeout: float | None = None) -> bool:
        return self._synced.wait(timeout)

    def items(self) -> builtins.list[dict[str, Any]]:
        """The objects as last delivered to the handler (a copy of the informer's cache)."""
        with self._lock:
            return [dict(o) for o in self._store.values()]

    def _run(self) -> None:
        failures = 0  # in a row; a watch that ends normally resets it
        need_list = True
        while not self._stop.is_set():
            fresh_list = need_list
            try:
                if need_list:
                    self._relist()
                    need_list = False
                if self._watch_once():
                    failures = 0
                    continue
            except Gone as exc:
                log.info("%s informer: %s; relisting", self.kind, exc)
                need_list = True
                if not fresh_list:
                    continue
                self.errors += 1  # Gone right after a list: do not hammer the server, back off
            except ApiError as exc:
                self.errors += 1
                log.warning("%s informer: %s (retry in %.1fs)", self.kind, exc, self._backoff.delay(failures + 1))
            except Exception:
                self.errors += 1
                log.exception("%s informer: unexpected error (retry in %.1fs)", self.kind,
                              self._backoff.delay(failures + 1))
            failures += 1
            self._stop.wait(self._backoff.delay(failures, self._rng))

    def _deliver(self, ev: WatchEvent) -> None:
        try:
            self.handler(ev)
        except Exception:
            log.exception("%s informer: handler failed on %s %s", self.kind, ev.type, _key(ev.object))

    def _relist(self) -> None:
        res = self.cluster.list(self.kind, namespace=self.namespace, field_selector=self.field_selector)
        self.lists += 1
        fresh = {_key(o): o for o in res.items}
        with self._lock:
            old, self._store = self._store, fresh
            self.resource_version = res.resource_version
        for k, obj in old.items():
            if k not in fresh and not self._stop.is_set():
                self._deliver(WatchEvent("DELETED", obj))
        for k, obj in fresh.items():
            prev = old.get(k)
            if self._stop.is_set():
                return
            if prev is None:
                self._deliver(WatchEvent("ADDED", obj))
            elif _rv(prev) != _rv(obj):
                self._deliver(WatchEvent("MODIFIED", obj))
        self._synced.set()

    def _watch_once(self) -> bool:
        """One watch request; True when it was healthy (delivered something or stayed open >= 1 s).

        An unhealthy one (closed at once, again and again) makes :meth:`_run` back off.
        """
        started = time.monotonic()
        timeout = self.watch_timeout * random.uniform(1.0, 2.0)  # spread reconnects, as client-go does
        stream = self.cluster.open_watch(
            self.kind,
            resource_version=self.resource_version,
            namespace=self.namespace,
            field_selector=self.field_selector,
            timeout_seconds=timeout,
        )
        with self._lock:
            self._stream = stream
        if self._stop.is_set():
            stream.close()
        self.watches += 1
        got = False
        try:
            for ev in self.cluster.events(self.kind, stream):
                if self._stop.is_set():
                    break
                got = True
                rv = _rv(ev.object)
                k = _key(ev.object)
                with self._lock:
                    if rv:
                        self.resource_version = rv
                    if ev.type == "DELETED":
                        self._store.pop(k, None)
                    elif ev.type in ("ADDED", "MODIFIED"):
                        self._store[k] = dict(ev.object)
                if ev.type != "BOOKMARK":
                    self._deliver(ev)
        finally:
            with self._lock:
                self._stream = None
            stream.close()
        return got or time.monotonic() - started >= 1.0
