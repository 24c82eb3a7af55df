"""Pod dependency gate (the sample scheduler's PreFilter, seeds): a pod annotated with
``rely.on.namespaces/name`` and ``rely.on.pod/labs`` waits until the pods it relies on are ready.

The annotation names are the sample's; ``rely.on.pod/labs`` is a label selector string (``k8s-app=metrics-server``).
The pod is *ready to schedule* when the namespace exists and at least one pod there matches the selector and every
matching pod is Ready (the sample's ``IsReady``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from common.objects import PodView
from common.selectors import parse_selector_string

__all__ = ["NAMESPACE_ANNOTATION", "LABELS_ANNOTATION", "DependencyVerdict", "check_dependency"]

NAMESPACE_ANNOTATION = "rely.on.namespaces/name"
LABELS_ANNOTATION = "rely.on.pod/labs"


@dataclass(frozen=True, slots=True)
class DependencyVerdict:
    ok: bool
    reason: str  # kube-style reason for the "0/N nodes are available" message when not ok


def check_dependency(annotations: Mapping[str, str], namespaces: Iterable[str],
                     pods: Iterable[PodView]) -> DependencyVerdict:
    namespace = annotations.get(NAMESPACE_ANNOTATION, "")
    selector_text = annotations.get(LABELS_ANNOTATION, "")
    if not namespace or not selector_text:
        return DependencyVerdict(True, "")
    if namespace not in set(namespaces):
        return DependencyVerdict(False, f"not found namespace: {namespace}")
    try:
        selector = parse_selector_string(selector_text)
    except ValueError:
        return DependencyVerdict(False, f"invalid {LABELS_ANNOTATION} selector {selector_text!r}")
    matching = [p for p in pods if p.namespace == namespace and not p.terminal and selector.matches(p.labels)]
    if not matching or not all(p.ready for p in matching):
        return DependencyVerdict(False, "rely pod not ready")
    return DependencyVerdict(True, "")
