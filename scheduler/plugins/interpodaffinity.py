"""interpodaffinity: kube's InterPodAffinity on the session (filter and score, arguments ``hardPodAffinityWeight``
and ``ignorePreferredTermsOfExistingPods``).

Filter, in kube's order, the first failure reported per node:
* the pod's required affinity — some pod matching *all* its terms must run in the node's domain of every term
  (a node lacking a term's key fails), except for the first pod of a group that matches its own terms while no
  such pod runs anywhere: UnschedulableAndUnresolvable "node(s) didn't match pod affinity rules";
* the pod's required anti-affinity — no matching pod in the node's domain: "node(s) didn't match pod anti-affinity
  rules";
* existing pods' required anti-affinity against this pod: "node(s) didn't satisfy existing pods anti-affinity rules".
Score: per topology domain, + weight for every existing pod matching one of the pod's preferred affinity terms,
− weight for its preferred anti-affinity terms, + ``hardPodAffinityWeight`` for existing pods whose *required*
affinity the pod matches, ± the existing pods' preferred terms that the pod matches; a node scores the sum over its
domains, min-max normalised to 0..100 over the scored nodes.  Terminating pods count, as in kube.

Counting uses :class:`~scheduler.plugins.podtopologyspread.PodIndex` (per-node counts per term, kept current by
session events); only pods that carry affinity terms themselves are walked one by one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from common.objects import PodView
from common.selectors import LabelSelector, SelectorError
from scheduler.framework.api import TaskInfo
from scheduler.framework.plugin import Arguments, register_plugin
from scheduler.framework.session import Session
from scheduler.framework.status import Code, FilterResult
from scheduler.predicates.podaffinity import AFFINITY_REASON, ANTI_AFFINITY_REASON, EXISTING_ANTI_AFFINITY_REASON

from .podtopologyspread import Matcher, PodIndex, SpreadCheck

__all__ = ["NAME", "Term", "PodTerms", "pod_terms", "InterPodAffinityCheck", "InterPodAffinity"]

NAME = "interpodaffinity"
# the argument keys this plugin reads (a nested key as parent/child); tests hold the code and docs to it
ARGUMENTS: tuple[str, ...] = ("hardPodAffinityWeight", "ignorePreferredTermsOfExistingPods")
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]
_REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
_PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"


@dataclass(frozen=True, slots=True)
class Term:
    """One pod (anti-)affinity term of an owning pod: which pods it selects and over which topology key."""

    namespaces: frozenset[str] | None  # None = every namespace
    selector: LabelSelector
    topology_key: str
    weight: int = 0

    @property
    def matcher(self) -> tuple[frozenset[str] | None, LabelSelector]:
        return (self.namespaces, self.selector)

    def matches(self, pod: PodView) -> bool:
        return (self.namespaces is None or pod.namespace in self.namespaces) and self.selector.matches(pod.labels)


@dataclass(frozen=True, slots=True)
class PodTerms:
    required_affinity: tuple[Term, ...] = ()
    required_anti: tuple[Term, ...] = ()
    preferred_affinity: tuple[Term, ...] = ()
    preferred_anti: tuple[Term, ...] = ()


def _term(owner: PodView, raw: Mapping[str, Any], weight: int, where: str) -> Term:
    raw_selector = raw.get("labelSelector")
    if raw_selector is None:
        selector = _NOTHING  # kube: a term without a labelSelector selects no pod
    else:
        merged = dict(raw_selector)
        extra = [{"key": k, "operator": "In", "values": [owner.labels[k]]}
                 for k in raw.get("matchLabelKeys") or [] if k in owner.labels]
        extra += [{"key": k, "operator": "NotIn", "values": [owner.labels[k]]}
                  for k in raw.get("mismatchLabelKeys") or [] if k in owner.labels]
        if extra:
            merged["matchExpressions"] = [*(merged.get("matchExpressions") or []), *extra]
        selector = LabelSelector.parse(merged, field=f"{where}.labelSelector")
    ns_selector = raw.get("namespaceSelector")
    names = frozenset(str(n) for n in raw.get("namespaces") or [])
    if ns_selector is not None and not ns_selector:
        namespaces: frozenset[str] | None = None  # {} selects every namespace
    else:
        namespaces = names or frozenset({owner.namespace})
    return Term(namespaces, selector, str(raw.get("topologyKey", "")), weight)


# no label set satisfies both requirements: the selector of a term that has none
_NOTHING = LabelSelector.parse({"matchExpressions": [{"key": "loadwise.io/matches-nothing", "operator": "Exists"},
                                                     {"key": "loadwise.io/matches-nothing",
                                                      "operator": "DoesNotExist"}]})


def pod_terms(pod: PodView) -> PodTerms:
    """The pod's affinity terms (SelectorError/ValueError on a malformed one)."""
    aff = pod.affinity
    out: dict[str, list[Term]] = {"ra": [], "rn": [], "pa": [], "pn": []}
    for kind, req_key, pref_key in (("podAffinity", "ra", "pa"), ("podAntiAffinity", "rn", "pn")):
        block = aff.get(kind) or {}
        for i, t in enumerate(block.get(_REQUIRED) or []):
            out[req_key].append(_term(pod, t, 0, f"{kind}.{_REQUIRED}[{i}]"))
        for i, p in enumerate(block.get(_PREFERRED) or []):
            out[pref_key].append(_term(pod, p.get("podAffinityTerm") or {}, int(p.get("weight") or 0),
                                       f"{kind}.{_PREFERRED}[{i}].podAffinityTerm"))
    return PodTerms(tuple(out["ra"]), tuple(out["rn"]), tuple(out["pa"]), tuple(out["pn"]))


class InterPodAffinityCheck:
    """Per session: filter and score over the shared pod index and topology domain ids."""

    def __init__(self, ssn: Session, *, hard_weight: int = 1, ignore_existing_preferred: bool = False,
                 spread: SpreadCheck | None = None) -> None:
        self.ssn = ssn
        self.index = PodIndex.of(ssn)
        self.n = len(ssn.nodes)
        self.hard_weight = hard_weight
        self.ignore_existing_preferred = ignore_existing_preferred
        self._domains = spread if spread is not None else SpreadCheck(ssn, (), False)
        self._terms: dict[str, PodTerms | None] = {}

    def terms_of(self, uid: str, pod: PodView) -> PodTerms | None:
        if uid not in self._terms:
            try:
                self._terms[uid] = pod_terms(pod)
            except (SelectorError, ValueError, TypeError):
                self._terms[uid] = None
        return self._terms[uid]

    def _domain(self, key: str) -> tuple[IntArray, int]:
        return self._domains.domains(key)

    def _per_domain(self, ids: IntArray, ndom: int, per_node: IntArray) -> IntArray:
        has = ids >= 0
        return np.bincount(ids[has], weights=per_node[has], minlength=ndom).astype(np.int64)

    def _same_domain(self, key: str, node: int) -> BoolArray:
        ids, _ = self._domain(key)
        if ids[node] < 0:
            return np.zeros(self.n, dtype=np.bool_)
        out: BoolArray = ids == ids[node]
        return out

    # -- filter --

    def filter(self, task: TaskInfo) -> FilterResult:
        n = self.n
        terms = self.terms_of(task.uid, task.pod)
        if terms is None:
            return FilterResult(np.zeros(n, dtype=np.bool_),
                                default=(Code.UNRESOLVABLE, f"invalid pod affinity in {task.key}"))
        ok = np.ones(n, dtype=np.bool_)
        reasons: dict[int, list[tuple[Code, str]]] = {}

        def fail(bad: BoolArray, code: Code, reason: str) -> None:
            for i in np.flatnonzero(ok & bad).tolist():
                reasons[i] = [(code, reason)]
            ok[bad] = False

        if terms.required_affinity:
            matcher: Matcher = tuple(t.matcher for t in terms.required_affinity)
            per_node = self.index.counts(matcher, include_terminating=True)
            exist = np.ones(n, dtype=np.bool_)
            has_keys = np.ones(n, dtype=np.bool_)
            any_pair = False
            for t in terms.required_affinity:
                ids, ndom = self._domain(t.topology_key)
                dom = self._per_domain(ids, ndom, per_node)
                any_pair |= bool((dom > 0).any())
                has_keys &= ids >= 0
                exist &= (ids >= 0) & (dom[np.maximum(ids, 0)] > 0 if ndom else False)
            if not any_pair and all(t.matches(task.pod) for t in terms.required_affinity):
                exist = has_keys  # the first pod of a group with affinity to itself
            fail(~exist, Code.UNRESOLVABLE, AFFINITY_REASON)
        for t in terms.required_anti:
            ids, ndom = self._domain(t.topology_key)
            if not ndom:
                continue
            dom = self._per_domain(ids, ndom, self.index.counts((t.matcher,), include_terminating=True))
            fail((ids >= 0) & (dom[np.maximum(ids, 0)] > 0), Code.UNSCHEDULABLE, ANTI_AFFINITY_REASON)
        for uid, placed in self.index.with_affinity.items():
            other = self.terms_of(uid, placed.pod)
            if other is None:
                continue
            for t in other.required_anti:
                if t.matches(task.pod):
                    fail(self._same_domain(t.topology_key, placed.node), Code.UNSCHEDULABLE,
                         EXISTING_ANTI_AFFINITY_REASON)
        return FilterResult(ok, reasons)

    # -- score --

    def raw_score(self, task: TaskInfo) -> IntArray | None:
        """Per node Σ of its domains' topology scores, or None when kube's PreScore would skip the pod."""
        terms = self.terms_of(task.uid, task.pod)
        if terms is None:
            return None
        if not terms.preferred_affinity and not terms.preferred_anti and not self.index.with_affinity:
            return None
        score = np.zeros(self.n, dtype=np.int64)
        for sign, own in ((1, terms.preferred_affinity), (-1, terms.preferred_anti)):
            for t in own:
                ids, ndom = self._domain(t.topology_key)
                if not ndom:
                    continue
                dom = self._per_domain(ids, ndom, self.index.counts((t.matcher,), include_terminating=True))
                score += np.where(ids >= 0, sign * t.weight * dom[np.maximum(ids, 0)], 0)
        for uid, placed in self.index.with_affinity.items():
            other = self.terms_of(uid, placed.pod)
            if other is None:
                continue
            # (weight override or 0 for the term's own weight, sign, terms)
            weighted: list[tuple[int, int, Sequence[Term]]] = []
            if self.hard_weight > 0:
                weighted.append((self.hard_weight, 1, other.required_affinity))
            if not self.ignore_existing_preferred:
                weighted += [(0, 1, other.preferred_affinity), (0, -1, other.preferred_anti)]
            for fixed, sign, group in weighted:
                for t in group:
                    if not t.matches(task.pod):
                        continue
                    same = self._same_domain(t.topology_key, placed.node)
                    if not same.any():
                        continue
                    score += np.where(same, sign * (fixed or t.weight), 0)
        return score

    def score(self, task: TaskInfo) -> IntArray:
        """0..100 per node, min-max normalised over the nodes being scored (0 elsewhere)."""
        raw = self.raw_score(task)
        out = np.zeros(self.n, dtype=np.int64)
        if raw is None:
            return out
        mask = self.ssn.scoring_mask()
        if not mask.any():
            return out
        hi, lo = int(raw[mask].max()), int(raw[mask].min())
        if hi - lo <= 0:
            return out
        scaled = (100.0 * ((raw - lo).astype(np.float64) / float(hi - lo))).astype(np.int64)
        return np.where(mask, scaled, 0).astype(np.int64)


def _weight_arg(args: Arguments) -> int:
    v = args.get("hardPodAffinityWeight", 1)
    if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= 100:
        raise ValueError(f"{NAME} argument hardPodAffinityWeight: must be an integer in 0..100, got {v!r}")
    return v


class InterPodAffinity:
    name = NAME

    def __init__(self, args: Arguments) -> None:
        self.hard_weight = _weight_arg(args)
        ignore = args.get("ignorePreferredTermsOfExistingPods", False)
        if not isinstance(ignore, bool):
            raise ValueError(f"{NAME} argument ignorePreferredTermsOfExistingPods: must be true or false, "
                             f"got {ignore!r}")
        self.ignore_existing_preferred = ignore
        self.weight = args.score_weight()

    def on_session_open(self, ssn: Session) -> None:
        check = InterPodAffinityCheck(ssn, hard_weight=self.hard_weight,
                                      ignore_existing_preferred=self.ignore_existing_preferred)

        def score(task: TaskInfo) -> IntArray:
            out: IntArray = check.score(task) * self.weight
            return out

        ssn.add_vector_predicate_fn(NAME, check.filter)
        ssn.add_vector_score_fn(NAME, score)

    def on_session_close(self, ssn: Session) -> None:
        return None


@register_plugin(NAME)
def _build(args: Arguments) -> InterPodAffinity:
    return InterPodAffinity(args)
