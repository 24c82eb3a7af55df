"""loadaware: Koordinator's LoadAwareScheduling on our session (specs/koordinator.md §1): filter nodes whose real
usage plus the estimated usage of pods placed but not yet in metrics would exceed the thresholds, and score nodes
by their remaining real capacity.  Allocations made in this session are reserved in the plugin's assigned-pod
cache at once, so several pods placed in one session see each other."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from common.qos import PriorityClass
from scheduler.framework.api import TaskInfo, TaskStatus
from scheduler.framework.plugin import Arguments, register_plugin
from scheduler.framework.session import EventHandler, Session
from scheduler.framework.status import Code, FilterResult
from scheduler.loadaware.args import parse_loadaware_args
from scheduler.loadaware.cache import assigned_pod
from scheduler.loadaware.estimator import estimate_pod, estimate_vector
from scheduler.loadaware.evaluate import LoadAwareState
from scheduler.loadaware.snapshot import open_state

__all__ = ["LoadAware", "WATERLINE_PERCENT_KEY"]

NAME = "loadaware"
# Snapshot.extra key: int64 [nodes, len(args.resource_names)] waterline percents from the nodes' active policies
WATERLINE_PERCENT_KEY = "waterline_percent"
IntArray = npt.NDArray[np.int64]


class LoadAware:
    name = NAME

    def __init__(self, args: Arguments) -> None:
        self.args = parse_loadaware_args(dict(args), source=f"plugin {NAME} arguments")
        self.weight = args.score_weight()
        self.state: LoadAwareState | None = None
        self._estimates: dict[str, IntArray] = {}

    def estimate(self, task: TaskInfo) -> IntArray:
        est = self._estimates.get(task.uid)
        if est is None:
            raw = estimate_pod(task.pod, self.args.estimated_scaling_factors,
                               allow_customize=self.args.allow_customize_estimation)
            est = estimate_vector(raw, self.args.resource_names)
            self._estimates[task.uid] = est
        return est

    def on_session_open(self, ssn: Session) -> None:
        on_nodes = [t.pod for n in ssn.nodes for t in n.tasks.values()
                    if t.status not in (TaskStatus.PIPELINED, TaskStatus.ALLOCATED)]
        extra: Any = ssn.snapshot.extra.get(WATERLINE_PERCENT_KEY)
        state = open_state(self.args, ssn.node_views(), on_nodes, ssn.snapshot.node_metrics, ssn.now,
                           extra if isinstance(extra, np.ndarray) else None)
        self.state = state

        def predicate(task: TaskInfo) -> FilterResult:
            res = state.filter(self.estimate(task), is_prod=task.pod.priority_class == PriorityClass.PROD,
                               is_daemonset=task.pod.is_daemonset)
            reasons = {i: [(Code.UNSCHEDULABLE, r) for r in rs] for i, rs in state.reasons(res).items()}
            return FilterResult(res.mask, reasons)

        def score(task: TaskInfo) -> IntArray:
            out: IntArray = state.score(self.estimate(task),
                                        is_prod=task.pod.priority_class == PriorityClass.PROD) * self.weight
            return out

        def on_allocate(task: TaskInfo) -> None:
            if task.node_name:
                state.reserve(assigned_pod(task.pod, task.node_name, ssn.now, self.args))

        def on_deallocate(task: TaskInfo) -> None:
            state.unreserve(task.pod.key)

        ssn.add_vector_predicate_fn(NAME, predicate)
        ssn.add_vector_score_fn(NAME, score)
        ssn.add_event_handler(EventHandler(on_allocate, on_deallocate))

    def on_session_close(self, ssn: Session) -> None:
        self.state = None


@register_plugin(NAME)
def _build(args: Arguments) -> LoadAware:
    return LoadAware(args)
