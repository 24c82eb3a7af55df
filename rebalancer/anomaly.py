"""The anomaly condition: a hot node becomes a source only after several hot observations in a row.

As LowNodeLoad's detector: ``consecutiveAbnormalities`` hot observations make a node abnormal,
``consecutiveNormalities`` cool ones make it normal again, and a gap longer than the timeout between two
observations starts the count afresh.  Once a node was relieved it is reset to normal, so the next round needs a
new run of hot observations (which read NodeMetrics reported after the eviction) before it acts there again.
"""

from __future__ import annotations

from dataclasses import dataclass

from .args import AnomalyCondition

__all__ = ["AnomalyDetector"]


@dataclass(slots=True)
class _State:
    abnormal: bool = False
    hot: int = 0
    cool: int = 0
    last: float | None = None


class AnomalyDetector:
    def __init__(self, condition: AnomalyCondition) -> None:
        self.condition = condition
        self._nodes: dict[str, _State] = {}

    def observe(self, node: str, hot: bool, now: float) -> bool:
        """Record one observation of ``node``; returns whether it is abnormal now."""
        st = self._nodes.setdefault(node, _State())
        if st.last is not None and now - st.last > self.condition.timeout:
            st.hot = st.cool = 0
        st.last = now
        if hot:
            st.hot, st.cool = st.hot + 1, 0
            if st.hot >= self.condition.consecutive_abnormalities:
                st.abnormal = True
        else:
            st.hot, st.cool = 0, st.cool + 1
            if st.cool >= self.condition.consecutive_normalities:
                st.abnormal = False
        return st.abnormal

    def reset(self, node: str) -> None:
        """Back to normal with no observations (after the node was relieved)."""
        self._nodes[node] = _State()

    def forget(self, keep: set[str]) -> None:
        """Drop the nodes not in ``keep`` (deleted from the cluster)."""
        for name in [n for n in self._nodes if n not in keep]:
            del self._nodes[name]

    def hot_count(self, node: str) -> int:
        st = self._nodes.get(node)
        return st.hot if st is not None else 0
