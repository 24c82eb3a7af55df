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

import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from common.objects import PodView
from common.selectors import LabelSelector, SelectorError
from scheduler.framework.api import TaskInfo
from scheduler.framework.memo import IdentityMemo
from scheduler.framework.plugin import Arguments, register_plugin
from scheduler.framework.session import EventHandler, Session
from scheduler.framework.status import Code, FilterResult
from scheduler.predicates.failures import Failures
from scheduler.predicates.podaffinity import AFFINITY_REASON, ANTI_AFFINITY_REASON, EXISTING_ANTI_AFFINITY_REASON

from .podindex import GroupKey, Matcher, Placed, PodIndex, group_key
from .podtopologyspread import SpreadCheck

__all__ = ["NAME", "Term", "PodTerms", "pod_terms", "parsed_terms", "ExistingTerms", "InterPodAffinityCheck",
           "InterPodAffinity"]

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


# the kinds of an existing pod's terms, in the order of :class:`PodTerms`
REQUIRED_AFFINITY, REQUIRED_ANTI, PREFERRED_AFFINITY, PREFERRED_ANTI = range(4)
# one distinct term of the placed pods: its kind and the term (weight included)
TermKey = tuple[int, Term]
_EXISTING: weakref.WeakKeyDictionary[Session, ExistingTerms] = weakref.WeakKeyDictionary()
TERMS_MEMO = "interpodaffinity.terms"


def names_terms(pod: PodView) -> bool:
    """Whether the pod names pod (anti-)affinity terms, well-formed or not: placing or removing it may change what
    the placed pods' terms select anywhere in their domains."""
    aff = pod.affinity
    return bool(aff.get("podAffinity") or aff.get("podAntiAffinity"))


def parsed_terms(memo: IdentityMemo[Any], pod: PodView) -> PodTerms | None:
    """The pod's terms, parsed once per pod object for as long as ``memo`` (the session memo's table of them) keeps
    it (None: malformed)."""
    got: list[PodTerms | None] | None = memo.get(pod)
    if got is None:
        try:
            got = memo.put(pod, [pod_terms(pod)])
        except (SelectorError, ValueError, TypeError):
            got = memo.put(pod, [None])
    return got[0]


class ExistingTerms:
    """The (anti-)affinity terms of the placed pods that carry any, counted per node by distinct term: an incoming
    pod is matched once per distinct term (and once per namespace and label set), not once per placed pod.  Made
    from the pod index's pods with affinity when first read, then kept current from the session's events (the
    index syncs first: its handler was added before this one's).  One per session, shared (:meth:`of`)."""

    def __init__(self, ssn: Session) -> None:
        # not the session: this is kept by a weak reference to the session, which it must not hold alive
        self._memo = ssn.memo.table(TERMS_MEMO)
        self.index = PodIndex.of(ssn)
        self._owners: dict[str, tuple[Placed, list[TermKey]]] | None = None
        self._by_term: dict[TermKey, dict[int, int]] = {}
        self._matches: dict[GroupKey, tuple[int, list[TermKey]]] = {}
        self.version = 0  # moves whenever a count does
        self._moved: dict[TermKey, int] = {}  # per distinct term, the version its counts last moved at
        self._terms_version = 0  # moves whenever a distinct term comes or goes
        ssn.add_event_handler(EventHandler(self._sync, self._sync))

    @classmethod
    def of(cls, ssn: Session) -> ExistingTerms:
        got = _EXISTING.get(ssn)
        if got is None:
            got = _EXISTING[ssn] = cls(ssn)
        return got

    def by_term(self) -> dict[TermKey, dict[int, int]]:
        """Per distinct term, how many placed pods carry it on each node row (no zero entries)."""
        if self._owners is None:
            self._owners = {}
            for uid, placed in self.index.with_affinity.items():
                self._add(uid, placed)
        return self._by_term

    def matching(self, pod: PodView, group: GroupKey) -> list[TermKey]:
        """The distinct terms that select ``pod`` (``group``: its namespace and labels, all a term reads), kept per
        group while no distinct term comes or goes."""
        by_term = self.by_term()
        hit = self._matches.get(group)
        if hit is not None and hit[0] == self._terms_version:
            return hit[1]
        out = [key for key in by_term if key[1].matches(pod)]
        self._matches[group] = (self._terms_version, out)
        return out

    def stamp(self) -> tuple[int, int]:
        """What :meth:`moved_since` compares with: the count and distinct-term versions now."""
        return self.version, self._terms_version

    def moved_since(self, stamp: tuple[int, int], keys: Sequence[TermKey]) -> bool:
        """Whether a distinct term came or went, or the counts of one of ``keys`` moved, since ``stamp``."""
        version, terms_version = stamp
        if terms_version != self._terms_version:
            return True
        if version == self.version:
            return False
        moved = self._moved
        return any(moved[key] > version for key in keys)

    def _sync(self, task: TaskInfo) -> None:
        if self._owners is None:
            return
        now = self.index.with_affinity.get(task.uid)
        had = self._owners.get(task.uid)
        if had is not None and had[0] is now:
            return
        if had is not None:
            self._remove(task.uid)
        if now is not None:
            self._add(task.uid, now)

    def _add(self, uid: str, placed: Placed) -> None:
        assert self._owners is not None
        terms = parsed_terms(self._memo, placed.pod)
        keys: list[TermKey] = []
        if terms is not None:
            for kind, group in enumerate((terms.required_affinity, terms.required_anti, terms.preferred_affinity,
                                          terms.preferred_anti)):
                keys += [(kind, t) for t in group]
        self._owners[uid] = (placed, keys)
        for key in keys:
            counts = self._by_term.get(key)
            if counts is None:
                counts = self._by_term[key] = {}
                self._terms_version += 1
            counts[placed.node] = counts.get(placed.node, 0) + 1
        self._moved_now(keys)

    def _remove(self, uid: str) -> None:
        assert self._owners is not None
        placed, keys = self._owners.pop(uid)
        for key in keys:
            counts = self._by_term[key]
            left = counts[placed.node] - 1
            if left:
                counts[placed.node] = left
            else:
                del counts[placed.node]
                if not counts:
                    del self._by_term[key]
                    del self._moved[key]
                    self._terms_version += 1
        self._moved_now(keys)

    def _moved_now(self, keys: Sequence[TermKey]) -> None:
        self.version += 1
        for key in keys:
            if key in self._by_term:
                self._moved[key] = self.version


class InterPodAffinityCheck:
    """Per session: filter and score over the shared pod index, the placed pods' terms and topology domain ids."""

    def __init__(self, ssn: Session, *, hard_weight: int = 1, ignore_existing_preferred: bool = False,
                 spread: SpreadCheck | None = None) -> None:
        self.ssn = ssn
        self._terms_memo = ssn.memo.table(TERMS_MEMO)
        self.index = PodIndex.of(ssn)
        self.existing = ExistingTerms.of(ssn)
        self.n = len(ssn.nodes)
        self.hard_weight = hard_weight
        self.ignore_existing_preferred = ignore_existing_preferred
        self._domains = spread if spread is not None else SpreadCheck(ssn, (), False)
        # per namespace and label set, while the counts of the terms selecting them are those they were made from
        # (:meth:`ExistingTerms.stamp`): the existing terms' score and what is made of it for normalising
        self._existing_scores: dict[GroupKey, _KeptScore] = {}
        # the answer of a pod no term keeps from any node (shared, so not to be changed)
        passes = np.ones(self.n, dtype=np.bool_)
        passes.flags.writeable = False
        self.everywhere = FilterResult(passes)

    def terms_of(self, uid: str, pod: PodView) -> PodTerms | None:
        return parsed_terms(self._terms_memo, pod)

    def _domain(self, key: str) -> tuple[IntArray, int]:
        return self._domains.domains(key)

    def _per_domain(self, ids: IntArray, ndom: int, per_node: IntArray) -> IntArray:
        has = ids >= 0
        return np.bincount(ids[has], weights=per_node[has], minlength=ndom).astype(np.int64)

    def _domain_sums(self, key: str, counts: Mapping[int, int]) -> IntArray:
        """Per node, the sum of ``counts`` (per node row) over the node's domain of ``key`` (0 without the key)."""
        ids, ndom = self._domain(key)
        dom = np.zeros(ndom + 1, dtype=np.int64)
        np.add.at(dom, ids[np.fromiter(counts.keys(), np.int64, len(counts))],
                  np.fromiter(counts.values(), np.int64, len(counts)))
        dom[ndom] = 0  # what rows without the key (id -1, the last slot) added counts for nothing
        out: IntArray = dom[ids]
        return out

    # -- filter --

    def filter(self, task: TaskInfo) -> FilterResult:
        n = self.n
        terms = self.terms_of(task.uid, task.pod)
        if terms is None:
            return FilterResult(np.zeros(n, dtype=np.bool_),
                                default=(Code.UNRESOLVABLE, f"invalid pod affinity in {task.key}"))
        placed_anti = self._placed_anti(task.pod) if self.index.with_affinity else []
        if not (terms.required_affinity or terms.required_anti or placed_anti):
            return self.everywhere
        out = Failures(n)
        if terms.required_affinity:
            out.fail(~self._affinity_met(task.pod, terms.required_affinity), Code.UNRESOLVABLE, AFFINITY_REASON)
        for t in terms.required_anti:
            ids, ndom = self._domain(t.topology_key)
            if not ndom:
                continue
            dom = self._per_domain(ids, ndom, self.index.counts((t.matcher,), include_terminating=True))
            out.fail((ids >= 0) & (dom[np.maximum(ids, 0)] > 0), Code.UNSCHEDULABLE, ANTI_AFFINITY_REASON)
        by_term = self.existing.by_term()
        for key in placed_anti:
            out.fail(self._domain_sums(key[1].topology_key, by_term[key]) > 0, Code.UNSCHEDULABLE,
                     EXISTING_ANTI_AFFINITY_REASON)
        return out.result()

    def _placed_anti(self, pod: PodView) -> list[TermKey]:
        """The placed pods' distinct required anti-affinity terms that select ``pod``: with none (and no required
        terms of its own) the pod passes everywhere, whatever preferred terms are placed."""
        return [key for key in self.existing.matching(pod, group_key(pod)) if key[0] == REQUIRED_ANTI]

    def _affinity_met(self, pod: PodView, required: Sequence[Term]) -> BoolArray:
        """The nodes in a domain holding a pod that matches all the required affinity terms, for every term; the
        first pod of a group (none matches anywhere, and the pod matches its own terms) needs only the keys."""
        matcher: Matcher = tuple(t.matcher for t in required)
        per_node = self.index.counts(matcher, include_terminating=True)
        exist = np.ones(self.n, dtype=np.bool_)
        has_keys = np.ones(self.n, dtype=np.bool_)
        any_pair = False
        for t in required:
            ids, ndom = self._domain(t.topology_key)
            dom = self._per_domain(ids, ndom, per_node)
            any_pair |= bool((dom > 0).any())
            has_keys &= ids >= 0
            exist &= (ids >= 0) & (dom[np.maximum(ids, 0)] > 0 if ndom else False)
        if not any_pair and all(t.matches(pod) for t in required):
            return has_keys
        return exist

    # -- score --

    def raw_score(self, task: TaskInfo) -> IntArray | None:
        """Per node Σ of its domains' topology scores, or None when kube's PreScore would skip the pod (not to be
        changed: it may be the kept score of the placed pods' terms)."""
        terms = self.terms_of(task.uid, task.pod)
        if terms is None:
            return None
        own = terms.preferred_affinity or terms.preferred_anti
        if not own and not self.index.with_affinity:
            return None
        if not own:
            return self._existing_score(task.pod)
        score = np.zeros(self.n, dtype=np.int64)
        for sign, group in ((1, terms.preferred_affinity), (-1, terms.preferred_anti)):
            for t in group:
                ids, ndom = self._domain(t.topology_key)
                if not ndom:
                    continue
                dom = self._per_domain(ids, ndom, self.index.counts((t.matcher,), include_terminating=True))
                score += np.where(ids >= 0, sign * t.weight * dom[np.maximum(ids, 0)], 0)
        if self.index.with_affinity:
            score += self._existing_score(task.pod)
        return score

    def _existing_score(self, pod: PodView) -> IntArray:
        """The placed pods' terms that select ``pod``, weighted, summed per node over the domains of their owners
        (kept per namespace and label set while no count moves)."""
        group = group_key(pod)
        hit = self._existing_scores.get(group)
        if hit is not None and not self.existing.moved_since(hit.stamp, self.existing.matching(pod, group)):
            return hit.raw
        stamp = self.existing.stamp()
        weights = {REQUIRED_AFFINITY: self.hard_weight}
        if not self.ignore_existing_preferred:
            weights[PREFERRED_AFFINITY] = weights[PREFERRED_ANTI] = 0  # the term's own weight
        score = np.zeros(self.n, dtype=np.int64)
        by_term = self.existing.by_term()
        for key in self.existing.matching(pod, group):
            kind, t = key
            if kind not in weights or (kind == REQUIRED_AFFINITY and weights[kind] <= 0):
                continue
            weight = (weights[kind] or t.weight) * (-1 if kind == PREFERRED_ANTI else 1)
            if weight:
                score += weight * self._domain_sums(t.topology_key, by_term[key])
        score.flags.writeable = False
        self._existing_scores[group] = _KeptScore(stamp, score)
        return score

    def score(self, task: TaskInfo) -> IntArray:
        """0..100 per node, min-max normalised over the nodes being scored (0 elsewhere).  For a pod without
        preferred terms of its own, kept with the placed pods' terms' score it comes from: over every node, and
        over some nodes holding that score's highest and lowest values (the same extremes) as its product with
        them."""
        raw = self.raw_score(task)
        if raw is None:
            return np.zeros(self.n, dtype=np.int64)
        mask = self.ssn.scoring_mask()
        kept = self._existing_scores.get(group_key(task.pod))
        if kept is None or kept.raw is not raw:
            return _min_max(raw, mask)
        every = self.ssn.scoring_count()
        if every == self.n:
            return kept.normalised()
        if every and kept.extremes_among(mask):
            out: IntArray = np.multiply(kept.normalised(), mask)
            return out
        return _min_max(raw, mask)


class _KeptScore:
    """The placed pods' terms' score of one namespace and label set (:meth:`InterPodAffinityCheck._existing_score`),
    the :meth:`ExistingTerms.stamp` it was made at, and what is made of it when first asked for: its min-max
    normalisation over every node, and the nodes holding its highest and lowest values."""

    __slots__ = ("stamp", "raw", "_normalised", "_extremes")

    def __init__(self, stamp: tuple[int, int], raw: IntArray) -> None:
        self.stamp = stamp
        self.raw = raw
        self._normalised: IntArray | None = None
        self._extremes: tuple[IntArray, IntArray] | None = None

    def normalised(self) -> IntArray:
        """:func:`_min_max` over every node (read-only)."""
        if self._normalised is None:
            raw = self.raw
            self._normalised = _scaled(raw, int(raw.max()), int(raw.min()))
            self._normalised.flags.writeable = False
        return self._normalised

    def extremes_among(self, mask: BoolArray) -> bool:
        """Whether the nodes of ``mask`` hold the highest and the lowest score of every node: their min-max
        normalisation is then the one over every node, 0 where ``mask`` does not hold."""
        if self._extremes is None:
            raw = self.raw
            self._extremes = np.flatnonzero(raw == raw.max()), np.flatnonzero(raw == raw.min())
        return all(_meets(mask, at) for at in self._extremes)


# how many of the nodes holding an extreme are looked at first (most scored masks hold one of them)
_FIRST_LOOK = 16


def _meets(mask: BoolArray, at: IntArray) -> bool:
    """Whether ``mask`` holds one of the nodes ``at``: the first few looked at, the rest only when none of those."""
    return bool(mask[at[:_FIRST_LOOK]].any()) or bool(mask[at[_FIRST_LOOK:]].any())


def _min_max(raw: IntArray, mask: BoolArray) -> IntArray:
    """kube's InterPodAffinity NormalizeScore: ``100 * (s - min) / (max - min)`` over the scored nodes, truncated;
    0 elsewhere, and everywhere when the scored nodes' scores are all alike."""
    n = len(raw)
    every = int(np.count_nonzero(mask))
    if not every:
        return np.zeros(n, dtype=np.int64)
    among = raw if every == n else raw[mask]   # a copy is cheaper than reductions with where=
    out = _scaled(raw, int(among.max()), int(among.min()))
    if every != n:
        np.multiply(out, mask, out=out)
    return out


def _scaled(raw: IntArray, hi: int, lo: int) -> IntArray:
    """``100 * (s - lo) / (hi - lo)`` of every score, truncated (0 everywhere when ``hi`` is not above ``lo``)."""
    if hi - lo <= 0:
        return np.zeros(len(raw), dtype=np.int64)
    out: IntArray = (100.0 * ((raw - lo).astype(np.float64) / float(hi - lo))).astype(np.int64)
    return out


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
