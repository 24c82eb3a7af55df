"""Prometheus gauges for how fresh each node's NodeMetric is, as the load-aware plugin sees it."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from prometheus_client import REGISTRY, CollectorRegistry, Gauge

from common.objects import NodeMetricView

from .evaluate import is_expired

__all__ = ["NodeMetricFreshness"]


class NodeMetricFreshness:
    """``loadwise_scheduler_nodemetric_age_seconds{node}`` and ``loadwise_scheduler_nodemetric_expired{node}``.

    A node without a NodeMetric, or whose NodeMetric never reported, has no age sample and ``expired`` 1.
    """

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        reg = registry if registry is not None else REGISTRY
        self.age = Gauge("loadwise_scheduler_nodemetric_age_seconds",
                         "Seconds since the node's NodeMetric status.updateTime", ["node"], registry=reg)
        self.expired = Gauge("loadwise_scheduler_nodemetric_expired",
                             "1 when the node's NodeMetric is missing or older than nodeMetricExpirationSeconds",
                             ["node"], registry=reg)
        self._nodes: set[str] = set()
        # labelled children per node, kept because ``labels()`` is slow; dropped with the sample they belong to
        self._age: dict[str, Gauge] = {}
        self._expired: dict[str, Gauge] = {}
        # the value each node's expired sample was last set to: set again only when it changes
        self._expired_value: dict[str, float] = {}

    def update(self, nodes: Iterable[str], metrics: Mapping[str, NodeMetricView], now: float,
               expiration_seconds: int) -> None:
        current = set(nodes)
        for gone in self._nodes - current:
            self._expired_value.pop(gone, None)
            for g, children in ((self.age, self._age), (self.expired, self._expired)):
                children.pop(gone, None)
                try:
                    g.remove(gone)
                except KeyError:
                    pass
        for node in current:
            m = metrics.get(node)
            update = m.update_time if m is not None else None
            if update is not None:
                age = self._age.get(node)
                if age is None:
                    age = self._age[node] = self.age.labels(node)
                age.set(max(0.0, now - update))
            elif self._age.pop(node, None) is not None:  # the node's age sample goes (children exist only there)
                self.age.remove(node)
            value = 1.0 if m is None or is_expired(update, now, expiration_seconds) else 0.0
            if self._expired_value.get(node) != value:
                expired = self._expired.get(node)
                if expired is None:
                    expired = self._expired[node] = self.expired.labels(node)
                expired.set(value)
                self._expired_value[node] = value
        self._nodes = current
