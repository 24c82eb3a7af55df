"""Leader election on a ``coordination.k8s.io/v1`` Lease, as client-go does it (15 s lease, 10 s renew deadline,
2 s retry period): only the holder schedules, and a holder that cannot renew within the deadline stops at once."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from common.clock import Clock, parse_rfc3339, to_rfc3339
from common.cluster import ApiError, Cluster, NotFound

__all__ = ["LeaderElector", "LeaseConfig"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class LeaseConfig:
    name: str = "loadwise-scheduler"
    namespace: str = "loadwise-system"
    identity: str = ""
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0

    def __post_init__(self) -> None:
        if not self.identity:
            raise ValueError("leader election: identity is required (e.g. the pod name)")
        if not self.lease_duration > self.renew_deadline > self.retry_period > 0:
            raise ValueError("leader election: need leaseDuration > renewDeadline > retryPeriod > 0")


def _micro(t: float) -> str:
    """Lease times are MicroTime: RFC 3339 with exactly six fractional digits."""
    seconds, micros = divmod(int(round(t * 1_000_000)), 1_000_000)
    return f"{to_rfc3339(seconds)[:-1]}.{micros:06d}Z"


class LeaderElector:
    def __init__(self, cluster: Cluster, clock: Clock, config: LeaseConfig,
                 on_stopped_leading: Callable[[], None] | None = None) -> None:
        self.cluster = cluster
        self.clock = clock
        self.config = config
        self.on_stopped_leading = on_stopped_leading
        self._last_renew: float | None = None   # monotonic time of the last successful acquire/renew
        self.transitions = 0

    def is_leader(self) -> bool:
        if self._last_renew is None:
            return False
        if self.clock.monotonic() - self._last_renew > self.config.renew_deadline:
            self._lose("renew deadline exceeded")
            return False
        return True

    def _lose(self, why: str) -> None:
        if self._last_renew is not None:
            log.warning("lost leadership of lease %s/%s: %s", self.config.namespace, self.config.name, why)
            self._last_renew = None
            if self.on_stopped_leading is not None:
                self.on_stopped_leading()

    def try_acquire_or_renew(self) -> bool:
        cfg = self.config
        now = self.clock.now()
        try:
            lease = self.cluster.get("Lease", cfg.name, namespace=cfg.namespace)
        except NotFound:
            lease = None
        except ApiError as exc:
            log.warning("lease get failed: %s", exc)
            return self.is_leader()
        spec: dict[str, Any] = dict((lease or {}).get("spec") or {})
        holder = spec.get("holderIdentity") or ""
        if lease is not None and holder and holder != cfg.identity:
            renew = spec.get("renewTime") or spec.get("acquireTime")
            duration = float(spec.get("leaseDurationSeconds") or cfg.lease_duration)
            try:
                expires = parse_rfc3339(str(renew), field="spec.renewTime") + duration if renew else 0.0
            except ValueError:
                expires = 0.0
            if expires > now:
                self._lose(f"lease held by {holder}")
                return False
        new_spec = dict(spec)
        new_spec.update({"holderIdentity": cfg.identity, "leaseDurationSeconds": int(cfg.lease_duration),
                         "renewTime": _micro(now)})
        if holder != cfg.identity:
            new_spec["acquireTime"] = _micro(now)
            # as client-go: every change of holder on an existing Lease counts, a released one included
            new_spec["leaseTransitions"] = int(spec.get("leaseTransitions") or 0) + (1 if lease is not None else 0)
        try:
            if lease is None:
                self.cluster.create("Lease", {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                                              "metadata": {"name": cfg.name, "namespace": cfg.namespace},
                                              "spec": new_spec})
            else:
                body = dict(lease)
                body["spec"] = new_spec
                self.cluster.replace("Lease", body)
        except ApiError as exc:   # Conflict: someone else wrote first; anything else: try again next period
            log.info("lease update failed: %s", exc)
            return self.is_leader()
        if holder != cfg.identity:
            self.transitions += 1
            log.info("acquired lease %s/%s as %s", cfg.namespace, cfg.name, cfg.identity)
        self._last_renew = self.clock.monotonic()
        return True

    def release(self) -> None:
        """Give the lease up on shutdown so another replica takes over without waiting for expiry."""
        if self._last_renew is None:
            return
        try:
            lease = self.cluster.get("Lease", self.config.name, namespace=self.config.namespace)
            body = dict(lease)
            spec = dict(body.get("spec") or {})
            if spec.get("holderIdentity") == self.config.identity:
                spec["holderIdentity"] = ""
                spec["leaseDurationSeconds"] = 1
                body["spec"] = spec
                self.cluster.replace("Lease", body)
        except ApiError as exc:
            log.info("lease release failed: %s", exc)
        self._last_renew = None

    def run(self, stop: threading.Event) -> None:
        while not stop.is_set():
            self.try_acquire_or_renew()
            stop.wait(self.config.retry_period)
        self.release()
