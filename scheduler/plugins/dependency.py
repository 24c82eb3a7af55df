"""dependency: the seed sample scheduler's PreFilter — a pod annotated ``rely.on.namespaces/name`` and
``rely.on.pod/labs`` stays pending until the pods it relies on are Ready.

A rejected pod gets the sample's reasons as the whole message, the way kube prints a PreFilter rejection:
"0/N nodes are available: rely pod not ready." or "... not found namespace: X."  The status is Unschedulable, as in
the sample; no node is evaluated.

Namespace existence: a snapshot carries no Namespace objects, so a namespace exists when the session's snapshot
lists it under ``Snapshot.extra["namespaces"]`` or, without that list, when some pod or PodGroup of the snapshot
lives in it.  Readiness does not change within a session, so each distinct
(namespace, selector) is answered once.
"""

from __future__ import annotations

from collections.abc import Iterable

from common.objects import PodView
from scheduler.framework.api import TaskInfo
from scheduler.framework.plugin import Arguments, register_plugin
from scheduler.framework.session import Session
from scheduler.framework.status import Code, Status
from scheduler.predicates.dependency import LABELS_ANNOTATION, NAMESPACE_ANNOTATION, DependencyVerdict, check_dependency

__all__ = ["NAME", "NAMESPACES_KEY", "Dependency"]

NAME = "dependency"
# the argument keys this plugin reads (a nested key as parent/child); tests hold the code and docs to it
ARGUMENTS: tuple[str, ...] = ()
NAMESPACES_KEY = "namespaces"


class Dependency:
    name = NAME

    def __init__(self, args: Arguments) -> None:
        del args  # the sample's PreFilter has no arguments

    def on_session_open(self, ssn: Session) -> None:
        snap = ssn.snapshot
        by_namespace: dict[str, list[PodView]] = {}
        for p in snap.pods:
            by_namespace.setdefault(p.namespace, []).append(p)
        listed = snap.extra.get(NAMESPACES_KEY)
        namespaces: set[str]
        if isinstance(listed, Iterable) and not isinstance(listed, str | bytes):
            namespaces = {str(ns) for ns in listed}
        else:
            namespaces = set(by_namespace) | {pg.namespace for pg in snap.podgroups.values()}
        verdicts: dict[tuple[str, str], DependencyVerdict] = {}

        def pre_predicate(task: TaskInfo) -> Status | None:
            ann = task.pod.annotations
            ns, labs = ann.get(NAMESPACE_ANNOTATION, ""), ann.get(LABELS_ANNOTATION, "")
            if not ns or not labs:
                return None
            verdict = verdicts.get((ns, labs))
            if verdict is None:
                verdict = check_dependency(ann, namespaces, by_namespace.get(ns, ()))
                verdicts[(ns, labs)] = verdict
            return None if verdict.ok else Status(Code.UNSCHEDULABLE, verdict.reason, NAME)

        ssn.add_pre_predicate_fn(NAME, pre_predicate)

    def on_session_close(self, ssn: Session) -> None:
        return None


@register_plugin(NAME)
def _build(args: Arguments) -> Dependency:
    return Dependency(args)
