"""Prometheus gauges for how fresh each node's NodeMetric is, as the load-aware plugin sees it."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping

from prometheus_client import REGISTRY, CollectorRegistry
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from common.objects import NodeMetricView

from .evaluate import is_expired

__all__ = ["NodeMetricFreshness"]


def _families() -> tuple[GaugeMetricFamily, GaugeMetricFamily]:
    """The two families, without samples yet."""
    return (GaugeMetricFamily("loadwise_scheduler_nodemetric_age_seconds",
                              "Seconds since the node's NodeMetric status.updateTime", labels=["node"]),
            GaugeMetricFamily("loadwise_scheduler_nodemetric_expired",
                              "1 when the node's NodeMetric is missing or older than nodeMetricExpirationSeconds",
                              labels=["node"]))


class NodeMetricFreshness(Collector):
    """``loadwise_scheduler_nodemetric_age_seconds{node}`` and ``loadwise_scheduler_nodemetric_expired{node}``.

    A node without a NodeMetric, or whose NodeMetric never reported, has no age sample and ``expired`` 1.
    ``update`` only keeps what the last session saw; the samples are made from it when Prometheus scrapes, so a
    session costs nothing per node here however many nodes there are (a scrape costs what the samples do).
    """

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self._nodes: tuple[str, ...] = ()
        self._metrics: Mapping[str, NodeMetricView] = {}
        self._now = 0.0
        self._expiration = 0
        (registry if registry is not None else REGISTRY).register(self)

    def update(self, nodes: Iterable[str], metrics: Mapping[str, NodeMetricView], now: float,
               expiration_seconds: int) -> None:
        """The nodes and NodeMetrics a session saw at ``now``: the samples until the next update."""
        self._nodes = tuple(nodes)
        self._metrics = dict(metrics)
        self._now = now
        self._expiration = expiration_seconds

    def describe(self) -> Iterator[GaugeMetricFamily]:
        return iter(_families())

    def collect(self) -> Iterator[GaugeMetricFamily]:
        age, expired = _families()
        now, expiration = self._now, self._expiration
        for node in dict.fromkeys(self._nodes):
            m = self._metrics.get(node)
            update = m.update_time if m is not None else None
            if update is not None:
                age.add_metric([node], max(0.0, now - update))
            expired.add_metric([node], 1.0 if m is None or is_expired(update, now, expiration) else 0.0)
        yield age
        yield expired
