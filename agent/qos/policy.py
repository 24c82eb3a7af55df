"""Which WaterlinePolicies run on this node: watched, validated once, and the last good version kept.

A policy that fails validation is rejected with a Warning Event and an ``Accepted=False`` status condition
whose message names the field (``spec.objectiveEnsurances[0].avoidanceThreshold: ...``); if an earlier
version of the same policy was valid, that version keeps running, so a typo in an update never switches
protection off.  Status is written only when it changes, because every node's agent sees every policy.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from common.clock import Clock, to_rfc3339
from common.cluster import ApiError, Cluster, EventRecord, Informer, WatchEvent
from common.config import ConfigError
from common.waterline import WaterlinePolicy

__all__ = ["Rejection", "PolicyStore", "CONDITION_TYPE"]

log = logging.getLogger(__name__)

CONDITION_TYPE = "Accepted"
KIND = "WaterlinePolicy"


@dataclass(frozen=True, slots=True)
class Rejection:
    policy: str
    field: str
    message: str
    spec_digest: str = ""  # the same spec rejected again (e.g. after our own status write) is not re-reported

    @property
    def text(self) -> str:
        return f"{self.field}: {self.message}" if self.field else self.message


def _digest(spec: Any) -> str:
    try:
        text = json.dumps(spec, sort_keys=True, default=str)
    except (TypeError, ValueError):
        text = repr(spec)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


class PolicyStore:
    """The valid WaterlinePolicies by name, fed by an informer or directly (``qos-plan``, tests)."""

    def __init__(self, cluster: Cluster | None = None, clock: Clock | None = None, component: str = "loadwise-agent"):
        self._cluster = cluster
        self._clock = clock
        self._component = component
        self._lock = threading.Lock()
        self._valid: dict[str, WaterlinePolicy] = {}
        self._rejected: dict[str, Rejection] = {}
        self._informer: Informer | None = None
        # bumped (under the lock) whenever the valid or rejected policies change; the applicable policies per
        # node label set are kept while it stays the same
        self._generation = 0
        self._applicable: dict[frozenset[tuple[str, str]], list[WaterlinePolicy]] = {}
        self._applicable_generation = 0

    # -- feeding ----------------------------------------------------------------------------------------
    def upsert(self, obj: Mapping[str, Any]) -> WaterlinePolicy | Rejection:
        meta = obj.get("metadata") if isinstance(obj, Mapping) else None
        name = str((meta or {}).get("name", "")) if isinstance(meta, Mapping) else ""
        digest = _digest(obj.get("spec") if isinstance(obj, Mapping) else None)
        try:
            policy = WaterlinePolicy.parse(obj)
        except ConfigError as exc:
            rej = Rejection(name, exc.field, exc.message, digest)
            with self._lock:
                previous = self._rejected.get(name)
                self._rejected[name] = rej
                self._generation += 1
            kept = self._valid.get(name)
            log.warning("WaterlinePolicy %s rejected (%s)%s", name or "<unnamed>", rej.text,
                        "; the last valid version keeps running" if kept else "")
            if previous is None or (previous.text, previous.spec_digest) != (rej.text, rej.spec_digest):
                self._report(obj, rej, kept is not None)
            return rej
        with self._lock:
            self._valid[policy.name] = policy
            self._rejected.pop(policy.name, None)
            self._generation += 1
        self._report(obj, None, True)
        return policy

    def delete(self, name: str) -> None:
        with self._lock:
            self._valid.pop(name, None)
            self._rejected.pop(name, None)
            self._generation += 1

    def replace_all(self, objs: Iterable[Mapping[str, Any]]) -> list[Rejection]:
        """Load a full set (a file); policies not in it are dropped.  Returns the rejections."""
        names: set[str] = set()
        rejections: list[Rejection] = []
        for obj in objs:
            r = self.upsert(obj)
            if isinstance(r, Rejection):
                rejections.append(r)
                names.add(r.policy)
            else:
                names.add(r.name)
        with self._lock:
            for name in list(self._valid):
                if name not in names:
                    del self._valid[name]
            self._generation += 1
        return rejections

    def handle(self, event: WatchEvent) -> None:
        """Informer handler for WaterlinePolicy watch events."""
        if event.type == "DELETED":
            self.delete(str((event.object.get("metadata") or {}).get("name", "")))
        elif event.type in ("ADDED", "MODIFIED"):
            self.upsert(event.object)

    def watch(self, cluster: Cluster) -> Informer:
        self._cluster = cluster
        self._informer = cluster.informer(KIND, self.handle)
        self._informer.start()
        return self._informer

    def stop(self) -> None:
        if self._informer is not None:
            self._informer.stop()
            self._informer = None

    # -- reading ----------------------------------------------------------------------------------------
    def policies(self) -> list[WaterlinePolicy]:
        with self._lock:
            return [self._valid[k] for k in sorted(self._valid)]

    def applicable(self, node_labels: Mapping[str, str]) -> list[WaterlinePolicy]:
        """The valid policies whose nodeSelector matches the node, by name (a new list; the matching is done once
        per label set while the policies stay the same)."""
        key = frozenset(node_labels.items())
        with self._lock:
            if self._applicable_generation != self._generation:
                self._applicable.clear()
                self._applicable_generation = self._generation
            hit = self._applicable.get(key)
            if hit is None:
                hit = [self._valid[k] for k in sorted(self._valid) if self._valid[k].applies_to(node_labels)]
                self._applicable[key] = hit
            return list(hit)

    def rejections(self) -> list[Rejection]:
        with self._lock:
            return [self._rejected[k] for k in sorted(self._rejected)]

    # -- reporting --------------------------------------------------------------------------------------
    def _report(self, obj: Mapping[str, Any], rej: Rejection | None, running: bool) -> None:
        """A Warning Event for a rejection and the policy's Valid condition, written only when it changes."""
        cluster = self._cluster
        if cluster is None:
            return
        meta = obj.get("metadata") or {}
        name = str(meta.get("name", ""))
        if not name:
            return
        if rej is not None:
            self._reject_event(cluster, meta, name, rej, running)
        cond = self._condition(obj, rej)
        if cond is None:
            return
        try:
            cluster.patch_conditions(KIND, name, [cond])
        except ApiError as exc:
            log.warning("cannot write the status of WaterlinePolicy %s: %s", name, exc)

    def _reject_event(self, cluster: Cluster, meta: Mapping[str, Any], name: str, rej: Rejection, running: bool) -> None:
        kept = " (the last valid version keeps running)" if running else ""
        try:
            cluster.emit_event(EventRecord(
                kind=KIND, name=name, namespace="default", uid=str(meta.get("uid", "")), type="Warning",
                reason="InvalidPolicy", message=f"rejected: {rej.text}{kept}", component=self._component,
                action="Validate",
            ))
        except ApiError as exc:
            log.warning("cannot emit the rejection event for %s: %s", name, exc)

    def _condition(self, obj: Mapping[str, Any], rej: Rejection | None) -> dict[str, Any] | None:
        """The Valid condition to write, or ``None`` when the stored one already says the same."""
        meta = obj.get("metadata") or {}
        status, reason = ("False", "InvalidField") if rej is not None else ("True", "Valid")
        message = rej.text if rej is not None else "the policy is valid"
        current = [c for c in ((obj.get("status") or {}).get("conditions") or []) if isinstance(c, Mapping)]
        mine = next((c for c in current if c.get("type") == CONDITION_TYPE), None)
        generation = meta.get("generation")
        if mine is not None and (mine.get("status"), mine.get("reason"), mine.get("message")) == (status, reason, message):
            if generation is None or mine.get("observedGeneration") == generation:
                return None
        cond: dict[str, Any] = {"type": CONDITION_TYPE, "status": status, "reason": reason, "message": message}
        # merged into the stored condition by type: a field of an earlier rejection is removed explicitly
        cond["field"] = rej.field if rej is not None else None
        if generation is not None:
            cond["observedGeneration"] = generation
        if self._clock is not None:
            cond["lastTransitionTime"] = to_rfc3339(self._clock.now())
        return cond
