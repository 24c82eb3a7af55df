"""A consistent, parsed view of the cluster for one session, and how pods become tasks and jobs
(docs/design/scheduler.md §2.1; pods without a group form a group of one, docs/design/differences.md §1.2)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TypeAlias

from common.objects import NodeMetricView, NodeView, PodGroupView, PodView, PriorityClassView, QueueView
from common.resources import Resources

from .changes import ChangeLog

__all__ = ["Snapshot", "WATERLINE_POLICIES_KEY", "DEFAULT_QUEUE", "DEFAULT_SCHEDULER_NAME", "job_id_of", "job_priority",
           "PodGroupJobArgs", "podgroup_job_args"]

DEFAULT_QUEUE = "default"
WATERLINE_POLICIES_KEY = "waterline_policies"
DEFAULT_SCHEDULER_NAME = "loadwise-scheduler"


@dataclass(slots=True)
class Snapshot:
    """What a session starts from.  Everything is already parsed; the session never reads raw dicts again."""

    nodes: list[NodeView]
    pods: list[PodView]
    podgroups: dict[str, PodGroupView] = field(default_factory=dict)
    queues: dict[str, QueueView] = field(default_factory=dict)
    priority_classes: dict[str, PriorityClassView] = field(default_factory=dict)
    node_metrics: dict[str, NodeMetricView] = field(default_factory=dict)
    extra: dict[str, object] = field(default_factory=dict)   # e.g. waterline percents for loadaware
    # from a scheduler cache: its pods by key (``pods`` is their values, in order), the generation the snapshot
    # shows and the cache's change log, from which a session learns what changed since an earlier snapshot
    pod_by_key: dict[str, PodView] | None = None
    generation: int = -1
    changes: ChangeLog | None = None

    @classmethod
    def build(cls, nodes: Iterable[NodeView], pods: Iterable[PodView], podgroups: Iterable[PodGroupView] = (),
              queues: Iterable[QueueView] = (), priority_classes: Iterable[PriorityClassView] = (),
              node_metrics: Iterable[NodeMetricView] = ()) -> Snapshot:
        return cls(
            nodes=sorted((n for n in nodes if n.ready), key=lambda n: n.name),
            pods=list(pods),
            podgroups={pg.key: pg for pg in podgroups},
            queues={q.name: q for q in queues},
            priority_classes={pc.name: pc for pc in priority_classes},
            node_metrics={m.name: m for m in node_metrics},
        )

    @classmethod
    def from_objects(cls, objects: Iterable[Mapping[str, object]]) -> Snapshot:
        """Parse the objects ``kubectl get -o yaml`` prints (Node, Pod, NodeMetric, PodGroup, Queue, PriorityClass)."""
        nodes: list[NodeView] = []
        pods: list[PodView] = []
        groups: list[PodGroupView] = []
        queues: list[QueueView] = []
        pcs: list[PriorityClassView] = []
        metrics: list[NodeMetricView] = []
        policies: list[Mapping[str, object]] = []
        for obj in objects:
            kind = obj.get("kind")
            if kind == "Node":
                nodes.append(NodeView.parse(obj))
            elif kind == "Pod":
                pods.append(PodView.parse(obj))
            elif kind == "PodGroup":
                groups.append(PodGroupView.parse(obj))
            elif kind == "Queue":
                queues.append(QueueView.parse(obj))
            elif kind == "PriorityClass":
                pcs.append(PriorityClassView.parse(obj))
            elif kind == "NodeMetric":
                metrics.append(NodeMetricView.parse(obj))
            elif kind == "WaterlinePolicy":
                policies.append(obj)
        snap = cls.build(nodes, pods, groups, queues, pcs, metrics)
        snap.extra[WATERLINE_POLICIES_KEY] = policies
        return snap

    def global_default_priority(self) -> int:
        for pc in self.priority_classes.values():
            if pc.global_default:
                return pc.value
        return 0

    def total_allocatable(self) -> Resources:
        """The sum of the nodes' allocatable, as adding their ``Resources`` one after the other gives it (an entry
        that sums to zero is dropped, and comes back at the end if a later node adds to it)."""
        total: dict[str, int] = {}
        for n in self.nodes:
            for k, v in n.allocatable.as_dict().items():
                s = total.get(k, 0) + v
                if s:
                    total[k] = s
                else:
                    total.pop(k, None)
        return Resources(total)


def job_id_of(pod: PodView) -> str:
    group = pod.group_name
    if group:
        return f"{pod.namespace}/{group}"
    return f"{pod.namespace}/podgroup-{pod.uid or pod.name}"


def job_priority(pg: PodGroupView | None, pod: PodView | None, snapshot: Snapshot) -> int:
    if pg is not None:
        if pg.priority_class_name and pg.priority_class_name in snapshot.priority_classes:
            return snapshot.priority_classes[pg.priority_class_name].value
        return snapshot.global_default_priority()
    if pod is not None:
        if pod.priority_class_name in snapshot.priority_classes:
            return snapshot.priority_classes[pod.priority_class_name].value
        if "priority" in (pod.raw.get("spec") or {}):
            return pod.priority
    return snapshot.global_default_priority()


# JobInfo's arguments up to ``preemptable``, in order (uid ... creation_time, preemptable)
PodGroupJobArgs: TypeAlias = tuple[str, str, str, str, int, int, dict[str, int], Resources, PodGroupView, str, float,
                                   bool]


def podgroup_job_args(pg: PodGroupView, snapshot: Snapshot) -> PodGroupJobArgs:
    """What a session's job of the PodGroup is made of (``JobInfo(*args)``): its queue (the default one when it
    names none), priority, minimum members and resources, phase and whether it may be preempted."""
    return (pg.key, pg.name, pg.namespace, pg.queue or DEFAULT_QUEUE, job_priority(pg, None, snapshot),
            pg.min_member, dict(pg.min_task_member), pg.min_resources, pg, pg.phase or "Pending",
            pg.creation_time or 0.0, pg.annotations.get("volcano.sh/preemptable", "true").lower() != "false")
