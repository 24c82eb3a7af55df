"""Node classification as LowNodeLoad does it: each node's NodeMetric usage against low and high thresholds.

A node is **low** when every resource is at or below its low threshold (an unschedulable node never is), **high**
when any resource is above its high threshold, and appropriate otherwise; with prod thresholds the usage of prod
pods is held against them the same way.  A node whose NodeMetric is missing or older than
``nodeMetricExpirationSeconds`` is **stale** and takes no part: neither source nor destination.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from common.objects import NodeMetricView, NodeView
from common.qos import PriorityClass
from common.resources import Resources

from .args import RebalanceArgs

PROD = PriorityClass.PROD.value

__all__ = ["NodeClass", "NodeLoad", "Thresholds", "above_destination", "above_source", "classify", "node_loads",
           "over_high", "thresholds"]


class NodeClass(enum.StrEnum):
    LOW = "low"
    APPROPRIATE = "appropriate"
    HIGH = "high"
    STALE = "stale"


@dataclass(frozen=True, slots=True)
class Thresholds:
    """Percent thresholds per resource, after deviation thresholds were resolved against the cluster mean."""

    low: Mapping[str, float]
    high: Mapping[str, float]
    prod_low: Mapping[str, float]
    prod_high: Mapping[str, float]
    destination: Mapping[str, float] = field(default_factory=dict)  # a resource not named: its high threshold
    source: Mapping[str, float] = field(default_factory=dict)  # likewise

    def destination_limit(self, resource: str) -> float:
        """How full a destination may get in ``resource``."""
        return self.destination.get(resource, self.high[resource])

    def source_limit(self, resource: str) -> float:
        """How far a move must be able to bring its source down in ``resource``."""
        return self.source.get(resource, self.high[resource])


@dataclass(frozen=True, slots=True)
class NodeLoad:
    """One node's usage as the NodeMetric reports it (``usage``: the node; ``prod_usage``: its prod pods)."""

    node: NodeView
    usage: Resources
    prod_usage: Resources
    fresh: bool

    @property
    def name(self) -> str:
        return self.node.name

    def percent(self, resource: str, usage: Mapping[str, int] | None = None) -> float:
        """``usage`` (default: the node's) of ``resource`` as a percent of allocatable (100 when it has none)."""
        alloc = self.node.allocatable.get(resource, 0)
        used = (self.usage if usage is None else usage).get(resource, 0)
        return used * 100.0 / alloc if alloc > 0 else (100.0 if used > 0 else 0.0)


def node_loads(nodes: Iterable[NodeView], metrics: Mapping[str, NodeMetricView], now: float,
               expiration_seconds: int) -> list[NodeLoad]:
    """Usage per node from its NodeMetric; expired as the scheduler expires them (``now - updateTime >= expiry``)."""
    out = []
    for node in nodes:
        nm = metrics.get(node.name)
        fresh = nm is not None and nm.update_time is not None and now - nm.update_time < expiration_seconds
        if nm is None:
            out.append(NodeLoad(node, Resources(), Resources(), False))
            continue
        prod: dict[str, int] = {}
        for pm in nm.pods:
            if pm.priority == PROD:
                for r, v in pm.usage.items():
                    prod[r] = prod.get(r, 0) + v
        out.append(NodeLoad(node, nm.node_usage, Resources(prod), fresh))
    return out


def _mean(loads: Sequence[NodeLoad], resource: str, prod: bool) -> float:
    if not loads:
        return 0.0
    return sum(n.percent(resource, n.prod_usage if prod else None) for n in loads) / len(loads)


def thresholds(args: RebalanceArgs, loads: Sequence[NodeLoad]) -> Thresholds:
    """The configured percents, or with ``useDeviationThresholds`` the cluster mean (over the fresh nodes) minus the
    low and plus the high (and destination) deviation, clamped to 0..100."""
    if not args.use_deviation_thresholds:
        as_float = {k: float(v) for k, v in args.low_thresholds.items()}
        return Thresholds(as_float, {k: float(v) for k, v in args.high_thresholds.items()},
                          {k: float(v) for k, v in args.prod_low_thresholds.items()},
                          {k: float(v) for k, v in args.prod_high_thresholds.items()},
                          {k: float(v) for k, v in args.destination_thresholds.items()},
                          {k: float(v) for k, v in args.source_thresholds.items()})
    fresh = [n for n in loads if n.fresh]

    def around(devs: Mapping[str, int], sign: int, prod: bool) -> dict[str, float]:
        return {r: min(100.0, max(0.0, _mean(fresh, r, prod) + sign * d)) for r, d in devs.items()}

    return Thresholds(around(args.low_thresholds, -1, False), around(args.high_thresholds, 1, False),
                      around(args.prod_low_thresholds, -1, True), around(args.prod_high_thresholds, 1, True),
                      around(args.destination_thresholds, 1, False), around(args.source_thresholds, 1, False))


def over_high(load: NodeLoad, thr: Thresholds, usage: Mapping[str, int] | None = None,
              prod_usage: Mapping[str, int] | None = None) -> list[str]:
    """The resources above their high threshold (node usage, then prod usage), given usage or the node's own."""
    out = [r for r, t in thr.high.items() if load.percent(r, usage) > t]
    prod = load.prod_usage if prod_usage is None else prod_usage
    out += [r for r, t in thr.prod_high.items() if load.percent(r, prod) > t and r not in out]
    return sorted(out)


def _above(load: NodeLoad, thr: Thresholds, limit: Callable[[str], float], usage: Mapping[str, int],
           prod_usage: Mapping[str, int]) -> bool:
    if any(load.percent(r, usage) > limit(r) for r in thr.high):
        return True
    return any(load.percent(r, prod_usage) > t for r, t in thr.prod_high.items())


def above_destination(load: NodeLoad, thr: Thresholds, usage: Mapping[str, int],
                      prod_usage: Mapping[str, int]) -> bool:
    """Whether a destination with ``usage`` would be too full: above a destination threshold, or ``prod_usage``
    above a prod high threshold."""
    return _above(load, thr, thr.destination_limit, usage, prod_usage)


def above_source(load: NodeLoad, thr: Thresholds, usage: Mapping[str, int], prod_usage: Mapping[str, int]) -> bool:
    """Whether a source left with ``usage`` would not be relieved enough: above a source threshold, or
    ``prod_usage`` above a prod high threshold."""
    return _above(load, thr, thr.source_limit, usage, prod_usage)


def classify(load: NodeLoad, thr: Thresholds) -> NodeClass:
    if not load.fresh:
        return NodeClass.STALE
    if over_high(load, thr):
        return NodeClass.HIGH
    low = all(load.percent(r) <= t for r, t in thr.low.items())
    low = low and all(load.percent(r, load.prod_usage) <= t for r, t in thr.prod_low.items())
    if low and not load.node.unschedulable:
        return NodeClass.LOW
    return NodeClass.APPROPRIATE
