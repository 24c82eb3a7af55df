"""podtopologyspread: kube's PodTopologySpread on the session, with ``defaultConstraints`` / ``defaultingType``.

Filter (``whenUnsatisfiable: DoNotSchedule``): a node without the topology label is UnschedulableAndUnresolvable;
otherwise ``count[domain] + selfMatch − minCount > maxSkew`` is Unschedulable.  Counts are the matching, non-
terminating pods of the pod's namespace on nodes that carry every constraint key and pass the pod's node affinity
(``nodeAffinityPolicy: Honor``) and, with ``nodeTaintsPolicy: Honor``, its tolerations.
Score (``ScheduleAnyway``): ``Σ count[domain] · log(domains + 2) + (maxSkew − 1)`` rounded, then normalised so the
emptiest scored node gets 100; with the pod's own constraints a node lacking any key is ignored (0).

Pods without constraints get the default constraints.  kube derives their selector from the Services and
controllers selecting the pod; a snapshot holds neither, so the workload is the pods of the namespace carrying the
same labels (per-pod labels such as a StatefulSet's pod name left out) — the seed sample's notion of "the same
pod" — and a pod without labels gets no default constraints, as kube does for a pod no workload selects.

The formulas are those of :mod:`scheduler.predicates.spread` evaluated on per-node counts kept by
:class:`PodIndex`, which the session's allocate/deallocate events keep current, so a pod's spread costs O(nodes)
instead of a scan of every pod; the tests check both give the same answers.  The index's per-group counts are
carried from one session to the next and moved only by the nodes whose pods changed.  The score is kept per pod
signature and moved by the placements since its previous pod (:mod:`.spreadscore`).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from common.objects import PodView
from common.selectors import LabelSelector
from scheduler.framework.api import TaskInfo
from scheduler.framework.plugin import Arguments, register_plugin
from scheduler.framework.session import Session
from scheduler.framework.status import Code, FilterResult
from scheduler.predicates.failures import Failures
from scheduler.predicates.spread import MISSING_LABEL_REASON, SKEW_REASON, SpreadConstraint, parse_constraints
from scheduler.predicates.taints import taint_filter

from .nodeaffinity import AffinityCheck
from .podindex import GroupKey, Matcher, Placed, PodIndex, group_key, matcher_matches, port_number
from .spreadscore import KeptSoftScore, SoftPart
from .tainttoleration import TaintCheck

# the pod index's names are re-exported: plugins and tests reach the index through this module
__all__ = ["NAME", "HOSTNAME", "SYSTEM_DEFAULT_CONSTRAINTS", "Matcher", "GroupKey", "group_key", "matcher_matches",
           "Placed", "PodIndex", "Constraint", "SpreadCheck", "PodTopologySpread", "parse_default_constraints",
           "workload_selector", "port_number"]

NAME = "podtopologyspread"
# the argument keys this plugin reads (a nested key as parent/child); tests hold the code and docs to it
ARGUMENTS: tuple[str, ...] = ("defaultConstraints", "defaultingType")
HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
SYSTEM_DEFAULT_CONSTRAINTS: tuple[Mapping[str, Any], ...] = (
    {"maxSkew": 3, "topologyKey": HOSTNAME, "whenUnsatisfiable": "ScheduleAnyway"},
    {"maxSkew": 5, "topologyKey": ZONE, "whenUnsatisfiable": "ScheduleAnyway"},
)
# labels that differ between pods of one workload and so must not narrow its default selector
PER_POD_LABELS = frozenset({"statefulset.kubernetes.io/pod-name", "apps.kubernetes.io/pod-index",
                            "controller-revision-hash", "batch.kubernetes.io/job-completion-index"})
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]
FloatArray = npt.NDArray[np.float64]
# ---- constraints -------------------------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Constraint:
    spec: SpreadConstraint
    honor_affinity: bool = True   # nodeAffinityPolicy (default Honor)
    honor_taints: bool = False    # nodeTaintsPolicy (default Ignore)


class _Plan:
    """A constraints list's DoNotSchedule and ScheduleAnyway constraints, and whether the latter honour node
    affinity or taints."""

    __slots__ = ("cons", "hard", "soft", "honor_affinity", "honor_taints")

    def __init__(self, cons: list[Constraint]) -> None:
        self.cons = cons
        self.hard = [c for c in cons if c.spec.hard]
        self.soft = [c for c in cons if not c.spec.hard]
        self.honor_affinity = any(c.honor_affinity for c in self.soft)
        self.honor_taints = any(c.honor_taints for c in self.soft)


def workload_selector(pod: PodView) -> LabelSelector:
    """The selector of "the pods of this workload" for default constraints (see the module docstring)."""
    labels = {k: v for k, v in pod.labels.items() if k not in PER_POD_LABELS}
    return LabelSelector.parse({"matchLabels": labels}) if labels else LabelSelector()


def _pod_constraints(pod: PodView) -> list[Constraint]:
    raw = (pod.raw.get("spec") or {}).get("topologySpreadConstraints") or []
    merged = []
    for c in raw:
        c = dict(c)
        keys = [k for k in c.get("matchLabelKeys") or [] if k in pod.labels]
        if keys:  # matchLabelKeys: the pod's values for those keys join the selector
            sel = dict(c.get("labelSelector") or {})
            sel["matchExpressions"] = [*(sel.get("matchExpressions") or []),
                                       *({"key": k, "operator": "In", "values": [pod.labels[k]]} for k in keys)]
            c["labelSelector"] = sel
        merged.append(c)
    specs = parse_constraints(merged, where=f"Pod {pod.key} spec.topologySpreadConstraints")
    return [Constraint(spec, c.get("nodeAffinityPolicy", "Honor") != "Ignore",
                       c.get("nodeTaintsPolicy", "Ignore") == "Honor") for spec, c in zip(specs, merged, strict=True)]


def parse_default_constraints(raw: Any, defaulting_type: Any, where: str) -> tuple[tuple[Mapping[str, Any], ...], bool]:
    """kube's PodTopologySpreadArgs: (constraints, system_defaulted).  ``defaultingType`` defaults to ``List`` when
    constraints are given and ``System`` otherwise; ``System`` requires no constraints; defaults carry no selector."""
    if raw is None:
        raw = []
    if not isinstance(raw, list):
        raise ValueError(f"{where}.defaultConstraints: must be a list")
    if defaulting_type is None or defaulting_type == "":
        defaulting_type = "List" if raw else "System"
    if defaulting_type not in ("System", "List"):
        raise ValueError(f"{where}.defaultingType: must be System or List, got {defaulting_type!r}")
    if defaulting_type == "System":
        if raw:
            raise ValueError(f"{where}.defaultConstraints: must be empty when defaultingType is System")
        return SYSTEM_DEFAULT_CONSTRAINTS, True
    seen: set[tuple[str, str]] = set()
    out = []
    for i, c in enumerate(raw):
        at = f"{where}.defaultConstraints[{i}]"
        if not isinstance(c, Mapping):
            raise ValueError(f"{at}: must be a mapping")
        skew = c.get("maxSkew")
        if isinstance(skew, bool) or not isinstance(skew, int) or skew <= 0:
            raise ValueError(f"{at}.maxSkew: must be a positive integer, got {skew!r}")
        key = c.get("topologyKey")
        if not isinstance(key, str) or not key:
            raise ValueError(f"{at}.topologyKey: required")
        when = c.get("whenUnsatisfiable")
        if when not in ("DoNotSchedule", "ScheduleAnyway"):
            raise ValueError(f"{at}.whenUnsatisfiable: must be DoNotSchedule or ScheduleAnyway, got {when!r}")
        if c.get("labelSelector") is not None:
            raise ValueError(f"{at}.labelSelector: default constraints must not define a selector, it is deduced "
                             "for each pod")
        if (key, when) in seen:
            raise ValueError(f"{at}: duplicate topologyKey {key!r} with whenUnsatisfiable {when}")
        seen.add((key, when))
        out.append(dict(c))
    return tuple(out), False


def _domain_ids(labels: Sequence[Mapping[str, str]], key: str) -> tuple[IntArray, int]:
    ids: dict[str, int] = {}
    arr = np.full(len(labels), -1, dtype=np.int64)
    for i, lb in enumerate(labels):
        if key in lb:
            arr[i] = ids.setdefault(lb[key], len(ids))
    arr.flags.writeable = False
    return arr, len(ids)


class SpreadCheck:
    """Per session: topology domain ids per key and the constraints' filter and score over :class:`PodIndex`."""

    def __init__(self, ssn: Session, defaults: Sequence[Mapping[str, Any]], system_defaulted: bool,
                 affinity: AffinityCheck | None = None, taints: TaintCheck | None = None) -> None:
        self.ssn = ssn
        self.index = PodIndex.of(ssn)
        self.defaults = tuple(defaults)
        self.system_defaulted = system_defaulted
        self.n = len(ssn.nodes)
        self._domains: dict[str, tuple[IntArray, int]] = {}
        # per topology key: the nodes carrying it, and whether every node is a domain of its own (row order)
        self._present: dict[str, BoolArray] = {}
        self._shifted: dict[str, IntArray] = {}   # per key, the domain ids + 1 (0 for the nodes without the key)
        self._all_present: dict[str, bool] = {}
        self._sizes: dict[str, tuple[int, int]] = {}
        self._one_per_node: dict[str, bool] = {}
        self._affinity = affinity
        self._taints = taints
        self._constraints: dict[str, tuple[list[Constraint], bool]] = {}
        self._by_signature: dict[tuple[str, frozenset[tuple[str, str]]], tuple[list[Constraint], bool]] = {}
        # per constraints list (by identity, the list held), its hard and soft constraints; the soft score per
        # signature (:meth:`_score_key`), kept current from the placements (False: scored node by node); the
        # answer of a pod without hard constraints (every node passes; shared, so not to be changed)
        self._plans: dict[int, _Plan] = {}
        self.everywhere = FilterResult(_read_only(np.ones(self.n, dtype=np.bool_)))
        self._kept_scores: dict[Hashable, tuple[list[Constraint], KeptSoftScore | Literal[False]]] = {}

    # -- helpers --

    def domains(self, key: str) -> tuple[IntArray, int]:
        """Per node row the id of its domain of ``key`` (-1 without the key, ids in row order), and how many
        domains there are; kept from session to session while the node objects are the same, in the same order."""
        hit = self._domains.get(key)
        if hit is None:
            views = self.ssn.node_views()
            # the labels read only when the nodes changed (a Python pass over every node)
            hit = self.ssn.memo.for_objects(("spread.domains", key), views,
                                            lambda: _domain_ids([v.labels for v in views], key))
            self._domains[key] = hit
            self._present[key] = hit[0] >= 0
            self._all_present[key] = bool(self._present[key].all())
            per_domain = np.bincount(hit[0][self._present[key]], minlength=hit[1])
            # the nodes of the smallest domain, and all the nodes with the key
            self._sizes[key] = (int(per_domain.min()) if hit[1] else 0, int(per_domain.sum()))
            self._one_per_node[key] = hit[1] == len(hit[0])  # ids are given in row order: 0, 1, 2, ...
        return hit

    def constraints(self, task: TaskInfo) -> tuple[list[Constraint], bool]:
        """The pod's constraints (or the defaults) and whether they are the system defaults."""
        hit = self._constraints.get(task.uid)
        if hit is None:
            # a pod seen by an earlier session under the same defaults has the same constraints
            memo = self.ssn.memo.table("spread.constraints")
            kept: tuple[tuple[Mapping[str, Any], ...], bool, tuple[list[Constraint], bool]] | None = memo.get(task.pod)
            if kept is not None and kept[1] == self.system_defaulted and kept[0] == self.defaults:
                hit = kept[2]
            else:
                hit = self._parse_constraints(task.pod)
                memo.put(task.pod, (self.defaults, self.system_defaulted, hit))
            self._constraints[task.uid] = hit
        return hit

    def _parse_constraints(self, pod: PodView) -> tuple[list[Constraint], bool]:
        """:meth:`_parse_pod`, kept for the session per spread constraints and labels, all it reads (replicas of a
        workload share it; a malformed pod raises and keeps nothing, its error naming the pod)."""
        key = (repr((pod.raw.get("spec") or {}).get("topologySpreadConstraints")), frozenset(pod.labels.items()))
        hit = self._by_signature.get(key)
        if hit is None:
            hit = self._by_signature[key] = self._parse_pod(pod)
        return hit

    def _parse_pod(self, pod: PodView) -> tuple[list[Constraint], bool]:
        own = _pod_constraints(pod)
        if own:
            return own, False
        sel = workload_selector(pod)
        specs = [] if sel.empty else [
            Constraint(SpreadConstraint(int(c["maxSkew"]), str(c["topologyKey"]),
                                        c.get("whenUnsatisfiable", "DoNotSchedule") == "DoNotSchedule", sel,
                                        int(c.get("minDomains", 1) or 1)))
            for c in self.defaults]
        return specs, self.system_defaulted

    def _eligible(self, pod: PodView, c: Constraint) -> BoolArray | None:
        """The nodes whose pods count for the constraint as the pod's node affinity and (when honoured)
        tolerations allow; None when nothing is honoured.  Not to be changed: it may be a kept mask."""
        mask: BoolArray | None = None
        if c.honor_affinity:
            if self._affinity is None:
                self._affinity = AffinityCheck(self.ssn)
            mask = self._affinity.required(pod)
        if c.honor_taints:
            if self._taints is None:
                self._taints = TaintCheck(self.ssn)
            tolerated = taint_filter(self._taints.groups, pod.tolerations)
            mask = tolerated if mask is None else mask & tolerated
        return mask

    def _counting(self, pod: PodView, c: Constraint, within: BoolArray) -> BoolArray | None:
        """The nodes of ``within`` that :meth:`_eligible` allows, or None when that is every node."""
        eligible = self._eligible(pod, c)
        counting = within if eligible is None else within & eligible
        return None if np.count_nonzero(counting) == len(counting) else counting

    def _has_all(self, cons: Sequence[Constraint]) -> BoolArray:
        out = np.ones(self.n, dtype=np.bool_)
        for c in cons:
            out &= self.domains(c.spec.topology_key)[0] >= 0
        return out

    def _per_node(self, pod: PodView, c: Constraint) -> IntArray:
        return self.index.counts(((frozenset({pod.namespace}), c.spec.selector),), include_terminating=False)

    # -- filter --

    def filter(self, task: TaskInfo) -> FilterResult:
        n = self.n
        try:
            cons, _ = self.constraints(task)
        except (ValueError, TypeError) as exc:
            return FilterResult(np.zeros(n, dtype=np.bool_), default=(Code.UNRESOLVABLE, str(exc)))
        hard = self._plan(cons).hard
        if not hard:
            return self.everywhere
        out = Failures(n)
        has_all = self._has_all(hard)
        for c in hard:
            ids, ndom = self.domains(c.spec.topology_key)
            out.fail(~self._present[c.spec.topology_key], Code.UNRESOLVABLE, MISSING_LABEL_REASON)
            if ndom:
                out.fail(self._skewed(task.pod, c, has_all)[ids], Code.UNSCHEDULABLE, SKEW_REASON)
        return out.result()

    def _skewed(self, pod: PodView, c: Constraint, has_all: BoolArray) -> BoolArray:
        """Per domain of the constraint's key, whether the pod placed there would exceed maxSkew; one more slot,
        False, for the nodes without the key (id -1).  Counted over the nodes carrying every hard constraint's key
        that the pod's node affinity (and tolerations, when honoured) allow."""
        ids, ndom = self.domains(c.spec.topology_key)
        eligible = self._eligible(pod, c)
        counting = has_all if eligible is None else has_all & eligible
        # every node's count weighted by whether it counts, binned by domain id + 1 (the nodes without the key, id
        # -1, in a slot of their own, dropped): no subscript of the counting nodes (integers, exact as float64)
        shifted = self._shifted.get(c.spec.topology_key)
        if shifted is None:
            shifted = self._shifted[c.spec.topology_key] = ids + 1
        dom = np.bincount(shifted, weights=np.multiply(self._per_node(pod, c), counting), minlength=ndom + 1)[1:]
        seen = np.bincount(shifted, weights=counting, minlength=ndom + 1)[1:] > 0
        domains = int(np.count_nonzero(seen))
        min_count = dom[seen].min() if domains and domains >= c.spec.min_domains else 0
        self_match = 1 if c.spec.selector.matches(pod.labels) else 0
        out = np.zeros(ndom + 1, dtype=np.bool_)
        out[:ndom] = dom + (self_match - min_count) > c.spec.max_skew
        return out

    # -- score --

    def score(self, task: TaskInfo) -> IntArray:
        """0..100 per node, normalised over the nodes being scored (0 elsewhere and on ignored nodes: with the
        pod's own constraints, those lacking one of their keys)."""
        n = self.n
        try:
            cons, system = self.constraints(task)
        except (ValueError, TypeError):
            return np.zeros(n, dtype=np.int64)
        plan = self._plan(cons)
        soft = plan.soft
        if not soft:
            return np.zeros(n, dtype=np.int64)
        mask = self.ssn.scoring_mask()
        has_all = None if system else self._has_all(soft)
        scored = mask if has_all is None else mask & has_all
        every = self.ssn.scoring_count() if has_all is None else int(np.count_nonzero(scored))
        out = self._kept_score(task.pod, plan, has_all, scored, every)
        if out is not None:
            return out
        weights = [self._weight(c.spec.topology_key, scored, every) for c in soft]
        return self.direct_score(task.pod, soft, scored, has_all, weights)

    def _kept_score(self, pod: PodView, plan: _Plan, has_all: BoolArray | None, scored: BoolArray,
                    every: int) -> IntArray | None:
        """The score from the pod's signature's :class:`KeptSoftScore` (made when missing or outgrown); None when
        the signature has too many combinations to keep."""
        key = self._score_key(pod, plan)
        hit = self._kept_scores.get(key)
        kept = hit[1] if hit is not None and hit[0] is plan.cons else None
        out = None if not kept else kept.score(scored, every)
        if out is None and kept is not False:
            kept = self._make_kept(pod, plan.soft, has_all) or False
            self._kept_scores[key] = (plan.cons, kept)
            out = None if kept is False else kept.score(scored, every)
        return out

    def _plan(self, cons: list[Constraint]) -> _Plan:
        """The DoNotSchedule and ScheduleAnyway constraints of ``cons``, kept per constraints list (by identity, as
        the lists are kept)."""
        hit = self._plans.get(id(cons))
        if hit is None or hit.cons is not cons:
            hit = self._plans[id(cons)] = _Plan(cons)
        return hit

    def direct_score(self, pod: PodView, soft: Sequence[Constraint], scored: BoolArray, has_all: BoolArray | None,
                     weights: Sequence[float]) -> IntArray:
        """The score computed over every node (no kept state): the form :class:`KeptSoftScore` reproduces."""
        raw: FloatArray | None = None
        for c, weight in zip(soft, weights, strict=True):
            part = self._soft_raw(pod, c, weight, has_all)   # a new array: summed into in place
            raw = part if raw is None else np.add(raw, part, out=raw)
        assert raw is not None
        np.add(raw, 0.5, out=raw)   # math.Round of non-negative values: floor(x + 0.5)
        return _normalised(np.floor(raw, out=raw).astype(np.int64), scored)

    def _score_key(self, pod: PodView, plan: _Plan) -> Hashable:
        """What a pod's soft score depends on besides the counts and the scored nodes: its constraints (the kept
        list), namespace, and the node affinity and tolerations that decide which nodes count when the constraints
        honour them."""
        if not plan.honor_affinity and not plan.honor_taints:
            return id(plan.cons), pod.namespace
        return (id(plan.cons), pod.namespace, self._affinity_key(pod) if plan.honor_affinity else None,
                repr(pod.tolerations) if plan.honor_taints else None)

    def _affinity_key(self, pod: PodView) -> str:
        if self._affinity is None:
            self._affinity = AffinityCheck(self.ssn)
        return self._affinity.signature(pod)

    def _make_kept(self, pod: PodView, soft: Sequence[Constraint], has_all: BoolArray | None) -> KeptSoftScore | None:
        parts = []
        for c in soft:
            ids, ndom = self.domains(c.spec.topology_key)
            matcher: Matcher = ((frozenset({pod.namespace}), c.spec.selector),)
            within = self._present[c.spec.topology_key] if has_all is None else has_all
            own = self._one_per_node[c.spec.topology_key]
            parts.append(SoftPart(c.spec.max_skew, ids, ndom, own, own or c.spec.topology_key == HOSTNAME,
                                  self._counting(pod, c, within),
                                  self.index.counts(matcher, include_terminating=False), self.index.moved(matcher)))
        return KeptSoftScore.make(parts, self.n)

    def _scored_domains(self, key: str, scored: BoolArray, every: int) -> int:
        """How many domains of ``key`` hold one of the ``every`` scored nodes: all of them when fewer nodes with
        the key go unscored than the smallest domain has, else counted."""
        ids, ndom = self.domains(key)
        present = self._present[key]
        if self._all_present[key]:
            unscored = len(ids) - every
        else:
            scored = scored & present
            unscored = self._sizes[key][1] - int(np.count_nonzero(scored))
        if unscored < self._sizes[key][0]:
            return ndom
        return int(np.count_nonzero(np.bincount(ids[scored], minlength=ndom)))

    def _weight(self, key: str, scored: BoolArray, every: int) -> float:
        """A ScheduleAnyway constraint's weight: log(domains scored + 2), the hostname's domains being the
        ``every`` nodes scored (0 for a key no node carries)."""
        ids, ndom = self.domains(key)
        if not ndom:
            return 0.0
        if key == HOSTNAME:
            size = every
        elif self._one_per_node[key]:
            size = every if self._all_present[key] else int(np.count_nonzero(scored & self._present[key]))
        else:
            size = self._scored_domains(key, scored, every)
        return math.log(size + 2)

    def _soft_raw(self, pod: PodView, c: Constraint, weight: float, has_all: BoolArray | None) -> FloatArray:
        """One ScheduleAnyway constraint's raw score per node: the matching pods in the node's domain times its
        ``weight``, plus maxSkew - 1 (0 on nodes without the key).  ``has_all``: count only the nodes carrying
        every constraint's key (the pod's own constraints), else those carrying this one's.  Made per domain and
        read per node through the domain ids."""
        key = c.spec.topology_key
        ids, ndom = self.domains(key)
        if not ndom:
            return np.zeros(len(ids), dtype=np.float64)
        present = self._present[key]
        one_per_node = self._one_per_node[key]
        counting = self._counting(pod, c, present if has_all is None else has_all)
        per_node = self._per_node(pod, c)
        if one_per_node:  # each node its own domain (every node has the key): the domain count is the node's own
            in_domain = per_node if counting is None else np.where(counting, per_node, 0)
            scaled: FloatArray = np.multiply(in_domain, weight, dtype=np.float64)
            return np.add(scaled, c.spec.max_skew - 1, out=scaled)
        # with every node counting, every node has the key: no id is -1
        dom = np.bincount(ids, weights=per_node, minlength=ndom) if counting is None else \
            np.bincount(ids[counting], weights=per_node[counting], minlength=ndom)
        per_domain = np.zeros(ndom + 1, dtype=np.float64)  # the last slot, 0, for the nodes without the key
        per_domain[:ndom] = dom * weight + (c.spec.max_skew - 1)
        out: FloatArray = per_domain[ids]
        return out


def _read_only(mask: BoolArray) -> BoolArray:
    mask.flags.writeable = False
    return mask


def _normalised(scores: IntArray, scored: BoolArray) -> IntArray:
    """kube's PodTopologySpread NormalizeScore over the scored nodes: the emptiest gets 100 (0 elsewhere)."""
    n = len(scores)
    every = int(np.count_nonzero(scored))
    if not every:
        return np.zeros(n, dtype=np.int64)
    among = scores if every == n else scores[scored]   # a copy is cheaper than reductions with where=
    hi, lo = int(among.max()), int(among.min())
    if hi == 0:
        return scored.astype(np.int64) * 100
    out: IntArray = 100 * (hi + lo - scores) // hi
    if every != n:
        np.multiply(out, scored, out=out)
    return out


class PodTopologySpread:
    name = NAME

    def __init__(self, args: Arguments) -> None:
        self.defaults, self.system = parse_default_constraints(args.get("defaultConstraints"),
                                                               args.get("defaultingType"), f"{NAME} argument")
        self.weight = args.score_weight()

    def on_session_open(self, ssn: Session) -> None:
        check = SpreadCheck(ssn, self.defaults, self.system)

        def score(task: TaskInfo) -> IntArray:
            out: IntArray = check.score(task) * self.weight
            return out

        ssn.add_vector_predicate_fn(NAME, check.filter)
        ssn.add_vector_score_fn(NAME, score)

    def on_session_close(self, ssn: Session) -> None:
        return None


@register_plugin(NAME)
def _build(args: Arguments) -> PodTopologySpread:
    return PodTopologySpread(args)
