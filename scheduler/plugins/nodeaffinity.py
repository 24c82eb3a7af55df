"""nodeaffinity: kube's NodeAffinity (docs/design/kube-scoring.md §8) on the session, with the ``addedAffinity`` argument.

Filter: ``spec.nodeSelector`` AND the pod's required node-affinity terms AND the configured ``addedAffinity``
required terms; a mismatch is UnschedulableAndUnresolvable ("node(s) didn't match Pod's node affinity/selector").
Score: the weights of the matching preferred terms (the pod's and ``addedAffinity``'s) summed and normalised to
0..100 over the nodes being scored (``100 * s // max``), times the plugin weight.

``addedAffinity`` is a NodeAffinity object, exactly as in kube's ``NodeAffinityArgs``; it lets one scheduler
profile keep every pod to a set of nodes (the seed's "only nodes labelled cpu=true").  It is validated up front
with kube's rules so a bad conf is rejected naming the field.

Pods of one workload share selector and affinity, so answers are cached per session by that signature; node label
sets are evaluated once per distinct set (:class:`~scheduler.predicates.groups.NodeGroups`).
"""

from __future__ import annotations

import json
import weakref
from collections.abc import Mapping
from typing import Any

import numpy as np
import numpy.typing as npt

from common.objects import PodView
from scheduler.framework.api import TaskInfo
from scheduler.framework.plugin import Arguments, register_plugin
from scheduler.framework.session import Session
from scheduler.framework.status import Code, FilterResult
from scheduler.predicates.affinity import (
    AFFINITY_REASON,
    LabelSig,
    affinity_filter,
    label_groups,
    preferred_sum,
    projected_groups,
    referenced_keys,
    uses_match_fields,
)
from scheduler.predicates.groups import NodeGroups

__all__ = ["NAME", "AffinityCheck", "NodeAffinity", "validate_node_affinity"]

NAME = "nodeaffinity"
# the argument keys this plugin reads (a nested key as parent/child); tests hold the code and docs to it
ARGUMENTS: tuple[str, ...] = ("addedAffinity",)
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]
_REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
_PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"
_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")


def _check_requirement(expr: Any, where: str, *, field: bool) -> None:
    """kube's validation of one node selector requirement (``field``: one of ``matchFields``)."""
    if not isinstance(expr, Mapping):
        raise ValueError(f"{where}: must be a mapping with key, operator and values")
    key, op, values = expr.get("key"), expr.get("operator"), expr.get("values")
    if not isinstance(key, str) or not key:
        raise ValueError(f"{where}.key: required")
    if field and key != "metadata.name":
        raise ValueError(f"{where}.key: only metadata.name is supported in matchFields, got {key!r}")
    if op not in _OPERATORS:
        raise ValueError(f"{where}.operator: {op!r} is not one of {', '.join(_OPERATORS)}")
    if values is not None and (not isinstance(values, list) or not all(isinstance(v, str | int) for v in values)):
        raise ValueError(f"{where}.values: must be a list of strings")
    _check_values(str(op), [str(v) for v in values or []], where, field=field)


def _check_values(op: str, vals: list[str], where: str, *, field: bool) -> None:
    """The values ``op`` takes: some for In/NotIn (one in matchFields), none for Exists/DoesNotExist, one integer
    for Gt/Lt; matchFields takes In and NotIn only."""
    if op in ("In", "NotIn"):
        if not vals:
            raise ValueError(f"{where}.values: must be non-empty for operator {op}")
        if field and len(vals) != 1:
            raise ValueError(f"{where}.values: must have exactly one value for matchFields")
        return
    if field:
        raise ValueError(f"{where}.operator: {op} is not supported in matchFields")
    if op in ("Exists", "DoesNotExist"):
        if vals:
            raise ValueError(f"{where}.values: must be empty for operator {op}")
        return
    if len(vals) != 1:
        raise ValueError(f"{where}.values: must have exactly one value for operator {op}")
    try:
        int(vals[0])
    except ValueError:
        raise ValueError(f"{where}.values[0]: must be an integer for operator {op}, got {vals[0]!r}") from None


def _check_term(term: Any, where: str) -> None:
    if not isinstance(term, Mapping):
        raise ValueError(f"{where}: must be a mapping with matchExpressions and/or matchFields")
    unknown = sorted(set(term) - {"matchExpressions", "matchFields"})
    if unknown:
        raise ValueError(f"{where}.{unknown[0]}: unknown field")
    for part, is_field in (("matchExpressions", False), ("matchFields", True)):
        items = term.get(part) or []
        if not isinstance(items, list):
            raise ValueError(f"{where}.{part}: must be a list")
        for k, expr in enumerate(items):
            _check_requirement(expr, f"{where}.{part}[{k}]", field=is_field)


def validate_node_affinity(raw: Any, where: str) -> Mapping[str, Any]:
    """kube's validation of a NodeAffinity object (as used by ``NodeAffinityArgs.addedAffinity``)."""
    if not isinstance(raw, Mapping):
        raise ValueError(f"{where}: must be a NodeAffinity mapping ({_REQUIRED}, {_PREFERRED})")
    unknown = sorted(set(raw) - {_REQUIRED, _PREFERRED})
    if unknown:
        raise ValueError(f"{where}.{unknown[0]}: unknown field")
    req = raw.get(_REQUIRED)
    if req is not None:
        if not isinstance(req, Mapping) or not isinstance(req.get("nodeSelectorTerms"), list):
            raise ValueError(f"{where}.{_REQUIRED}.nodeSelectorTerms: required list")
        terms = req["nodeSelectorTerms"]
        if not terms:
            raise ValueError(f"{where}.{_REQUIRED}.nodeSelectorTerms: must have at least one term")
        for i, term in enumerate(terms):
            _check_term(term, f"{where}.{_REQUIRED}.nodeSelectorTerms[{i}]")
    prefs = raw.get(_PREFERRED)
    if prefs is not None:
        if not isinstance(prefs, list):
            raise ValueError(f"{where}.{_PREFERRED}: must be a list")
        for i, p in enumerate(prefs):
            at = f"{where}.{_PREFERRED}[{i}]"
            if not isinstance(p, Mapping):
                raise ValueError(f"{at}: must be a mapping with weight and preference")
            w = p.get("weight")
            if isinstance(w, bool) or not isinstance(w, int) or not 1 <= w <= 100:
                raise ValueError(f"{at}.weight: must be an integer in 1..100, got {w!r}")
            _check_term(p.get("preference") or {}, f"{at}.preference")
    return raw


def _signature(pod: PodView) -> str:
    selector, affinity = pod.node_selector, pod.affinity.get("nodeAffinity")
    if not selector and affinity is None:
        return _NO_SIGNATURE   # most pods: no nodeSelector, no node affinity
    return json.dumps([sorted(selector.items()), affinity], sort_keys=True, default=str)


_NO_SIGNATURE = json.dumps([[], None])


class _Answers:
    """What every AffinityCheck of a session shares (they answer alike but for ``addedAffinity``): the pods'
    required masks per signature, and the nodes grouped by the label keys a signature reads."""

    def __init__(self) -> None:
        self.required: dict[str, BoolArray] = {}
        self.projections: dict[tuple[str, ...], NodeGroups[LabelSig]] = {}
        self.last: tuple[PodView, str] | None = None   # the last pod asked about and its signature


_ANSWERS: weakref.WeakKeyDictionary[Session, _Answers] = weakref.WeakKeyDictionary()


def _normalise(raw: IntArray, mask: BoolArray) -> IntArray:
    """DefaultNormalizeScore(100, reverse=false) over the scored nodes."""
    top = int(raw[mask].max()) if mask.any() else 0
    if top <= 0:
        return np.zeros(len(raw), dtype=np.int64)
    return np.where(mask, 100 * raw // top, 0).astype(np.int64)


class AffinityCheck:
    """Per session: node label groups, the ``addedAffinity`` answers (pod-independent) and per-signature caches."""

    def __init__(self, ssn: Session, added: Mapping[str, Any] | None = None) -> None:
        self.ssn = ssn
        views = ssn.node_views()
        self._views = views
        self._by_label_set: NodeGroups[LabelSig] | None = None
        self._by_name: NodeGroups[LabelSig] | None = None
        n = len(views)
        answers = _ANSWERS.get(ssn)
        if answers is None:
            answers = _ANSWERS[ssn] = _Answers()
        self._answers = answers
        self._preferred: dict[str, IntArray] = {}
        self.added_mask = np.ones(n, dtype=np.bool_)
        self.added_preferred = np.zeros(n, dtype=np.int64)
        if added:
            wrapped = {"nodeAffinity": dict(added)}
            if added.get(_REQUIRED) is not None:
                self.added_mask = affinity_filter({}, wrapped, self._groups_for(wrapped))
            if added.get(_PREFERRED):
                self.added_preferred = self._preferred_raw(wrapped)

    @property
    def labels(self) -> list[Mapping[str, str]]:
        """The nodes' labels in node order, read only when a grouping is made anew (most sessions take the last
        one's: a Python pass over every node, per check, cost more than the rest of the check's opening)."""
        return [v.labels for v in self._views]

    @property
    def names(self) -> list[str]:
        return [v.name for v in self._views]

    @property
    def _groups(self) -> NodeGroups[LabelSig]:
        """The nodes grouped by whole label set, made when first needed (a pod's own answers group the nodes by
        the keys it reads): the grouping only changes with the node objects, so later sessions over the same
        nodes reuse it."""
        if self._by_label_set is None:
            self._by_label_set = self.ssn.memo.for_objects(
                "node-label-groups", self._views,
                lambda: label_groups(self.labels, self.names, sorted_labels=self.ssn.memo.table("node-labels-sorted")))
        return self._by_label_set

    def _groups_for(self, affinity: Mapping[str, Any]) -> NodeGroups[LabelSig]:
        if not uses_match_fields(affinity):
            return self._groups
        if self._by_name is None:
            self._by_name = self.ssn.memo.for_objects(
                "node-label-groups-by-name", self._views,
                lambda: label_groups(self.labels, self.names, by_name=True,
                                     sorted_labels=self.ssn.memo.table("node-labels-sorted")))
        return self._by_name

    def _pod_groups(self, pod: PodView) -> NodeGroups[LabelSig]:
        """The nodes grouped by the labels the pod's selector and node affinity read (by whole label set, and by
        name too when its terms use matchFields; by whole label set when they are too malformed to name keys)."""
        if uses_match_fields(pod.affinity):
            return self._groups_for(pod.affinity)
        try:
            keys = referenced_keys(pod.node_selector, pod.affinity)
        except (AttributeError, TypeError):
            return self._groups
        got = self._answers.projections.get(keys)
        if got is None:  # kept from session to session while the node objects are the same, in the same order
            got = self._answers.projections[keys] = self.ssn.memo.for_objects(
                ("node-label-projection", keys), self._views, lambda: projected_groups(self.labels, keys))
        return got

    def _preferred_raw(self, affinity: Mapping[str, Any], groups: NodeGroups[LabelSig] | None = None) -> IntArray:
        groups = self._groups_for(affinity) if groups is None else groups
        return groups.evaluate(lambda sig: preferred_sum(affinity, dict(sig[0]), sig[1]), int).astype(np.int64)

    def signature(self, pod: PodView) -> str:
        """The pod's affinity signature (its nodeSelector and node affinity): pods with the same one get the same
        answers; kept per pod object across sessions (it is a JSON dump), and the last pod's for the session's
        checks (each filter and scorer of a pod asks in turn)."""
        last = self._answers.last
        if last is not None and last[0] is pod:
            return last[1]
        memo = self.ssn.memo.table("nodeaffinity.signature")
        key: str | None = memo.get(pod)
        if key is None:
            key = memo.put(pod, _signature(pod))
        self._answers.last = (pod, key)
        return key

    def required(self, pod: PodView) -> BoolArray:
        """The pod's own nodeSelector and required terms (what PodTopologySpread's nodeAffinityPolicy honours)."""
        key = self.signature(pod)
        hit = self._answers.required.get(key)
        if hit is None:
            hit = affinity_filter(pod.node_selector, pod.affinity, self._pod_groups(pod))
            hit.flags.writeable = False
            self._answers.required[key] = hit
        return hit

    def passes(self, task: TaskInfo) -> BoolArray:
        out: BoolArray = self.required(task.pod) & self.added_mask
        return out

    def filter(self, task: TaskInfo) -> FilterResult:
        return FilterResult(self.passes(task), default=(Code.UNRESOLVABLE, AFFINITY_REASON))

    def raw_score(self, pod: PodView) -> IntArray:
        key = self.signature(pod)
        hit = self._preferred.get(key)
        if hit is None:
            prefs = (pod.affinity.get("nodeAffinity") or {}).get(_PREFERRED)
            hit = self._preferred_raw(pod.affinity, self._pod_groups(pod)) if prefs else \
                np.zeros(len(self._views), dtype=np.int64)
            self._preferred[key] = hit
        out: IntArray = hit + self.added_preferred
        return out

    def score(self, task: TaskInfo) -> IntArray:
        """0..100 per node, normalised over the nodes being scored (0 elsewhere)."""
        return _normalise(self.raw_score(task.pod), self.ssn.scoring_mask())


class NodeAffinity:
    name = NAME

    def __init__(self, args: Arguments) -> None:
        raw = args.get("addedAffinity")
        self.added = None if raw is None else validate_node_affinity(raw, f"{NAME} argument addedAffinity")
        self.weight = args.score_weight()

    def on_session_open(self, ssn: Session) -> None:
        check = AffinityCheck(ssn, self.added)

        def score(task: TaskInfo) -> IntArray:
            out: IntArray = check.score(task) * self.weight
            return out

        ssn.add_vector_predicate_fn(NAME, check.filter)
        ssn.add_vector_score_fn(NAME, score)

    def on_session_close(self, ssn: Session) -> None:
        return None


@register_plugin(NAME)
def _build(args: Arguments) -> NodeAffinity:
    return NodeAffinity(args)
