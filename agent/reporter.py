"""Writing the node's NodeMetric: create it if missing, follow its spec, patch its status on schedule.

The reporter is driven, not self-scheduling: the daemon asks :meth:`NodeMetricReporter.due` every
second and calls :meth:`NodeMetricReporter.report` when it is.  That keeps the retry logic testable
on a fake clock against any ``common.cluster.Cluster`` (MemoryCluster in unit tests, the kube backend
in production).

* The first report creates the object (``spec.metricCollectPolicy`` from the agent's defaults) when
  it does not exist; a NodeMetric created by someone else keeps its spec.
* Every successful write returns the object; its spec becomes the policy in force (report interval,
  windows, memory policy).  An invalid spec is recorded and the last good policy keeps running.
* A failed write is retried after 1 s, 2 s, 4 s ... (capped), never later than the next regular
  report.  The status is rebuilt from the history at every attempt, so the report that finally
  lands carries complete, current windows rather than the stale body of the failed one.
* Keys the new status lacks are nulled in the patch, so a stale value never rides along with a
  fresh ``updateTime``.
* Writes are rate limited like koordlet's client (0.1 QPS, burst 2) so a flapping API server is not
  hammered by retries.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from agent.nodemetric import MetricCollectPolicy, nodemetric_object
from common.backoff import Backoff
from common.clock import Clock
from common.cluster import Cluster, Conflict, NotFound
from common.config import ConfigError

__all__ = ["ReportOutcome", "NodeMetricReporter", "TokenBucket", "clear_missing"]

log = logging.getLogger(__name__)

KIND = "NodeMetric"
StatusBuilder = Callable[[MetricCollectPolicy], Mapping[str, Any]]


@dataclass(frozen=True, slots=True)
class ReportOutcome:
    ok: bool
    at: float
    error: str = ""
    created: bool = False
    next_due: float = 0.0


def clear_missing(old: Mapping[str, Any], new: Mapping[str, Any]) -> dict[str, Any]:
    """A merge patch turning ``old`` into exactly ``new``: keys ``new`` lacks are set to null.

    A merge patch only adds and replaces, so a value the agent can no longer measure (say node
    memory after /proc/meminfo became unreadable) would otherwise linger next to a fresh
    ``updateTime`` and look current.  Lists are replaced whole by a merge patch anyway.
    """
    out: dict[str, Any] = {}
    for k, v in new.items():
        prev = old.get(k)
        out[k] = clear_missing(prev, v) if isinstance(v, Mapping) and isinstance(prev, Mapping) else v
    for k in old:
        if k not in new:
            out[k] = None
    return out


class TokenBucket:
    """``rate`` tokens per second up to ``burst``; time comes from the caller."""

    def __init__(self, rate: float, burst: int, now: float) -> None:
        self.rate = rate
        self.burst = float(burst)
        self._tokens = float(burst)
        self._t = now

    def _refill(self, now: float) -> None:
        if now > self._t:
            self._tokens = min(self.burst, self._tokens + (now - self._t) * self.rate)
            self._t = now

    def take(self, now: float) -> bool:
        self._refill(now)
        if self._tokens >= 1.0:
            self._tokens -= 1.0
            return True
        return False

    def ready_at(self, now: float) -> float:
        """When the next token will be available."""
        self._refill(now)
        return now if self._tokens >= 1.0 else now + (1.0 - self._tokens) / self.rate


class NodeMetricReporter:
    def __init__(
        self,
        cluster: Cluster,
        node_name: str,
        clock: Clock,
        default_policy: MetricCollectPolicy,
        *,
        retry_initial_seconds: float = 1.0,
        retry_max_seconds: float = 30.0,
        jitter_fraction: float = 0.0,
        first_report_delay: float = 0.0,
        rng: random.Random | None = None,
        qps: float = 0.1,
        burst: int = 2,
    ) -> None:
        self.cluster = cluster
        self.node_name = node_name
        self.clock = clock
        self.default_policy = default_policy
        self.policy = default_policy
        self.policy_error = ""
        self.backoff = Backoff(retry_initial_seconds, retry_max_seconds)
        self.jitter = jitter_fraction
        self._rng = rng or random.Random()
        now = clock.now()
        self.next_due = now + first_report_delay
        self.failures = 0
        self.successes = 0
        self.attempts = 0
        self.last_success: float | None = None
        self.last_error = ""
        self.last_status: Mapping[str, Any] | None = None
        self._exists = False
        self._server_status: Mapping[str, Any] = {}
        self._limiter = TokenBucket(qps, burst, now)

    def configure(self, default_policy: MetricCollectPolicy, *, retry_initial_seconds: float,
                  retry_max_seconds: float, jitter_fraction: float) -> None:
        """A reloaded config's settings; a policy adopted from the NodeMetric's spec stays in force."""
        if not self._exists and self.policy == self.default_policy:
            self.policy = default_policy
        self.default_policy = default_policy
        self.backoff = Backoff(retry_initial_seconds, retry_max_seconds)
        self.jitter = jitter_fraction

    def due(self, now: float | None = None) -> bool:
        return (self.clock.now() if now is None else now) >= self.next_due

    # -- the object ---------------------------------------------------------------------------------
    def ensure(self) -> bool:
        """Fetch the NodeMetric, creating it when missing; returns whether it was created."""
        created = False
        try:
            obj = self.cluster.get(KIND, self.node_name)
        except NotFound:
            try:
                obj = self.cluster.create(KIND, nodemetric_object(self.node_name, self.default_policy))
                created = True
                log.info("created NodeMetric %s", self.node_name)
            except Conflict:  # created meanwhile by the manager or another agent
                obj = self.cluster.get(KIND, self.node_name)
        self._adopt(obj)
        self._server_status = obj.get("status") or {}
        self._exists = True
        return created

    def _adopt(self, obj: Mapping[str, Any]) -> None:
        try:
            policy = MetricCollectPolicy.from_spec(obj.get("spec"), source=f"NodeMetric {self.node_name}")
        except ConfigError as exc:
            if str(exc) != self.policy_error:
                log.warning("%s; keeping the previous collect policy", exc)
            self.policy_error = str(exc)
            return
        self.policy_error = ""
        if policy != self.policy:
            log.info("NodeMetric %s collect policy now %s", self.node_name, policy)
        self.policy = policy

    # -- reporting ----------------------------------------------------------------------------------
    def report(self, build_status: StatusBuilder) -> ReportOutcome:
        """One attempt now: ensure the object, build the status for the policy in force, patch it."""
        now = self.clock.now()
        if not self._limiter.take(now):
            self.next_due = max(self.next_due, self._limiter.ready_at(now))
            return ReportOutcome(False, now, "rate limited", next_due=self.next_due)
        self.attempts += 1
        created = False
        try:
            if not self._exists:
                created = self.ensure()
            status = dict(build_status(self.policy))
            patch = clear_missing(self._server_status, status)
            obj = self.cluster.patch_status(KIND, self.node_name, {"status": patch})
        except NotFound as exc:
            self._exists = False  # deleted under us: recreate on the retry
            return self._failed(now, f"NodeMetric {self.node_name} not found: {exc}")
        except Exception as exc:  # noqa: BLE001 - any client or transport error: the agent must keep going
            return self._failed(now, f"{type(exc).__name__}: {exc}")
        self._adopt(obj)
        self._server_status = obj.get("status") or {}
        self.last_status = status
        self.failures = 0
        self.successes += 1
        self.last_success = now
        self.last_error = ""
        interval = float(self.policy.interval_seconds)
        spread = interval * self.jitter * (2 * self._rng.random() - 1) if self.jitter else 0.0
        self.next_due = now + interval + spread
        return ReportOutcome(True, now, created=created, next_due=self.next_due)

    def _failed(self, now: float, error: str) -> ReportOutcome:
        self.failures += 1
        self.last_error = error
        delay = min(self.backoff.delay(self.failures), float(self.policy.interval_seconds))
        self.next_due = now + delay
        log.warning("NodeMetric %s report failed (attempt %d, retry in %.1fs): %s", self.node_name, self.failures, delay, error)
        return ReportOutcome(False, now, error, next_due=self.next_due)
