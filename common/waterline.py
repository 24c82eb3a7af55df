"""The ``qos.loadwise.io/v1alpha1`` WaterlinePolicy as a typed, validated value (docs/design/waterline.md §1).

One object merges crane's NodeQOS (node selector and rules), the AvoidanceAction each rule names (inlined
as ``action``) and the PodQOS objects that choose candidate pods.  It is parsed once from the Kubernetes
dict.  Validation has one source of truth, the CRD's schema (:mod:`common.crdschema`): a policy file read
by the agent or ``loadwise qos-plan`` is refused exactly where the API server would refuse the object; this
module adds only what a schema cannot say (duplicate names, an action defined twice differently, a podQOS
allowing an action no rule defines, priority ranges).  Every rejection is a :class:`ConfigError` whose
``field`` is the path inside the object, for example ``spec.objectiveEnsurances[0].avoidanceThreshold``, so
the agent can report it in an Event and a status condition and keep running the last valid version.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from fractions import Fraction
from typing import Any

from common import crdschema
from common.config import ConfigError
from common.quantity import parse_quantity
from common.selectors import LabelSelector, SelectorError

__all__ = [
    "KNOWN_METRICS",
    "DRY_RUN_ANNOTATION",
    "CpuThrottle",
    "Throttle",
    "Eviction",
    "Action",
    "MetricRule",
    "Rule",
    "ScopeRequirement",
    "PodQOS",
    "WaterlinePolicy",
    "PRESSURE_METRICS",
]

# Every metric name docs/design/waterline.md §2.1 lists; the webhook's narrower list is an upstream accident.
# The six *_pressure_* names are a Loadwise extension (PRESSURE_METRICS below).
KNOWN_METRICS = frozenset(
    {
        "cpu_total_usage",
        "cpu_total_utilization",
        "cpu_core_numbers",
        "exclusive_cpu_idle",
        "cpu_load_1_min",
        "cpu_load_5_min",
        "cpu_load_15_min",
        "memory_total_usage",
        "memory_total_utilization",
        "memory_total",
        "disk_read_kibps",
        "disk_write_kibps",
        "disk_read_iops",
        "disk_read_utilization",
        "network_receive_kibps",
        "network_sent_kibps",
        "network_receive_pckps",
        "network_sent_pckps",
        "network_drop_in",
        "network_drop_out",
        "container_cpu_total_usage",
        "container_sched_run_queue_time",
        "container_cpu_limit",
        "container_cpu_quota",
        "container_cpu_period",
        "container_mem_total_usage",
        "ext_res_container_cpu_total_usage",
        "ext_res_container_mem_total_usage",
        "ext_cpu_total_distribute",
        *(f"{r}_pressure_{k}" for r in ("cpu", "memory", "io") for k in ("some", "full")),
    }
)
# Pressure stall metrics (a Loadwise extension): percent of the last 10 s in which some (or all non-idle)
# tasks waited for the resource, the kernel's avg10 from /proc/pressure/<resource>.
PRESSURE_METRICS: dict[str, tuple[str, str]] = {
    f"{r}_pressure_{k}": (r, k) for r in ("cpu", "memory", "io") for k in ("some", "full")
}

DRY_RUN_ANNOTATION = "qos.loadwise.io/dry-run"
CRD_FILE = "qos.loadwise.io_waterlinepolicies.yaml"
_PRIORITY_VALUE = re.compile(r"^\s*(-?\d+)\s*(?:-\s*(-?\d+)\s*)?$")


@dataclass(frozen=True, slots=True)
class CpuThrottle:
    min_cpu_ratio: int = 0
    step_cpu_ratio: int = 0


@dataclass(frozen=True, slots=True)
class Throttle:
    cpu: CpuThrottle = CpuThrottle()
    force_gc: bool = False  # accepted and ignored, as upstream


@dataclass(frozen=True, slots=True)
class Eviction:
    termination_grace_period_seconds: int | None = None


@dataclass(frozen=True, slots=True)
class Action:
    """An inlined AvoidanceAction; which blocks are present says what it does."""

    name: str
    cool_down_seconds: int = 300
    description: str = ""
    throttle: Throttle | None = None
    eviction: Eviction | None = None

    @property
    def kinds(self) -> tuple[str, ...]:
        out = []
        if self.throttle is not None:
            out.append("throttle")
        if self.eviction is not None:
            out.append("eviction")
        return tuple(out) or ("disableScheduling",)


@dataclass(frozen=True, slots=True)
class MetricRule:
    name: str
    value: Fraction  # exact decimal (docs/design/differences.md §3 B13), in the metric's own unit
    selector: LabelSelector = LabelSelector()


@dataclass(frozen=True, slots=True)
class Rule:
    name: str
    metric: MetricRule
    action: Action
    avoidance_threshold: int = 1
    restore_threshold: int = 1
    strategy: str = "None"

    @property
    def preview(self) -> bool:
        return self.strategy == "Preview"


@dataclass(frozen=True, slots=True)
class ScopeRequirement:
    scope_name: str  # QOSClass | Priority | Namespace (others are ignored when matching)
    operator: str  # In | NotIn
    values: tuple[str, ...]

    def matches(self, namespace: str, qos_class: str, priority: int) -> bool:
        if self.scope_name == "Namespace":
            hit = namespace in self.values
        elif self.scope_name == "QOSClass":
            hit = qos_class in self.values
        elif self.scope_name == "Priority":
            hit = any(_priority_in(v, priority) for v in self.values)
        else:
            return True
        return hit if self.operator == "In" else not hit


@dataclass(frozen=True, slots=True)
class PodQOS:
    """Chooses the pods a set of actions (by name) may touch."""

    name: str
    label_selector: LabelSelector | None
    scope: tuple[ScopeRequirement, ...] | None
    allowed_actions: tuple[str, ...]

    def matches(self, namespace: str, labels: Mapping[str, str], qos_class: str, priority: int) -> bool:
        """Crane's rule: with neither a non-empty label selector nor a scope selector, nothing matches."""
        has_labels = self.label_selector is not None and not self.label_selector.empty
        if not has_labels and self.scope is None:
            return False
        if has_labels and self.label_selector is not None and not self.label_selector.matches(labels):
            return False
        return all(r.matches(namespace, qos_class, priority) for r in self.scope or ())

    def allows(self, action_name: str) -> bool:
        return action_name in self.allowed_actions


@dataclass(frozen=True, slots=True)
class WaterlinePolicy:
    name: str
    node_selector: LabelSelector
    execute_excess: Fraction
    rules: tuple[Rule, ...]
    pod_qos: tuple[PodQOS, ...]
    dry_run: bool = False
    uid: str = ""
    generation: int = 0
    # accepted, but worth telling the author (an allowed action no rule defines)
    warnings: tuple[str, ...] = ()
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)

    def rule_key(self, rule: Rule) -> str:
        return f"{self.name}.{rule.name}"

    def applies_to(self, node_labels: Mapping[str, str]) -> bool:
        return self.node_selector.matches(node_labels)

    @classmethod
    def parse(cls, obj: Mapping[str, Any], *, source: str = "") -> WaterlinePolicy:
        """Validate every field (docs/design/waterline.md §1 table); the first problem raises with its path."""
        try:
            return _parse(obj)
        except ConfigError as exc:
            if source and not exc.source:
                raise ConfigError(exc.message, field=exc.field, source=source) from None
            raise


# -- parsing ----------------------------------------------------------------------------------------------


def _parse(obj: Mapping[str, Any]) -> WaterlinePolicy:
    if not isinstance(obj, Mapping):
        raise ConfigError("expected a WaterlinePolicy object")
    kind = obj.get("kind")
    if kind not in (None, "WaterlinePolicy"):
        raise ConfigError(f"expected WaterlinePolicy, got {kind!r}", field="kind")
    crdschema.validate(obj, CRD_FILE)
    meta = _map(obj.get("metadata"), "metadata", required=True)
    name = meta.get("name")
    if not isinstance(name, str) or not name:
        raise ConfigError("required", field="metadata.name")
    annotations = _map(meta.get("annotations"), "metadata.annotations")
    dry_raw = annotations.get(DRY_RUN_ANNOTATION)
    if dry_raw is not None and str(dry_raw).lower() not in ("true", "false"):
        raise ConfigError("must be \"true\" or \"false\"", field=f"metadata.annotations[{DRY_RUN_ANNOTATION}]")
    spec = obj["spec"]
    rules = _rules(spec["objectiveEnsurances"])
    pod_qos = tuple(_pod_qos(p, f"spec.podQOS[{i}]", i) for i, p in enumerate(spec.get("podQOS") or ()))
    warnings = _unknown_actions(spec, rules)
    generation = meta.get("generation", 0)
    return WaterlinePolicy(
        name=name,
        node_selector=_selector(spec.get("nodeSelector"), "spec.nodeSelector"),
        execute_excess=Fraction(Decimal(str(spec.get("executeExcess", "10%")).removesuffix("%"))) / 100,
        rules=rules,
        pod_qos=pod_qos,
        dry_run=str(dry_raw).lower() == "true" if dry_raw is not None else False,
        uid=str(meta.get("uid", "")),
        generation=generation if isinstance(generation, int) and not isinstance(generation, bool) else 0,
        warnings=warnings,
        raw=obj,
    )


def _rules(raw: list[Any]) -> tuple[Rule, ...]:
    """The rules, refusing a repeated rule name and one action name given two different bodies."""
    rules: list[Rule] = []
    actions: dict[str, tuple[Action, str]] = {}
    for i, doc in enumerate(raw):
        where = f"spec.objectiveEnsurances[{i}]"
        rule = _rule(doc, where)
        if any(r.name == rule.name for r in rules):
            raise ConfigError(f"duplicate rule name {rule.name!r}", field=f"{where}.name")
        prev = actions.setdefault(rule.action.name, (rule.action, where))
        if prev[0] != rule.action:
            raise ConfigError(f"action {rule.action.name!r} is also defined by {prev[1]} with a different body",
                              field=f"{where}.action")
        rules.append(rule)
    return tuple(rules)


def _rule(doc: Mapping[str, Any], where: str) -> Rule:
    mr = doc["metricRule"]
    try:
        value = parse_quantity(mr["value"])
    except ValueError as exc:  # the schema's pattern admits what parse_quantity may still find out of range
        raise ConfigError(str(exc), field=f"{where}.metricRule.value") from None
    if value <= 0:
        raise ConfigError("must be greater than 0", field=f"{where}.metricRule.value")
    return Rule(
        name=doc["name"],
        metric=MetricRule(mr["name"], value, _selector(mr.get("selector"), f"{where}.metricRule.selector")),
        action=_action(doc["action"]),
        avoidance_threshold=doc.get("avoidanceThreshold") or 1,
        restore_threshold=doc.get("restoreThreshold") or 1,
        strategy=doc.get("strategy") or "None",
    )


def _action(doc: Mapping[str, Any]) -> Action:
    throttle = None
    if "throttle" in doc:
        t = doc.get("throttle") or {}
        cpu = t.get("cpuThrottle") or {}
        throttle = Throttle(
            cpu=CpuThrottle(min_cpu_ratio=cpu.get("minCPURatio") or 0, step_cpu_ratio=cpu.get("stepCPURatio") or 0),
            force_gc=bool((t.get("memoryThrottle") or {}).get("forceGC", False)),
        )
    eviction = None
    if "eviction" in doc:
        eviction = Eviction((doc.get("eviction") or {}).get("terminationGracePeriodSeconds"))
    return Action(
        name=doc["name"],
        cool_down_seconds=doc.get("coolDownSeconds") or 300,
        description=doc.get("description") or "",
        throttle=throttle,
        eviction=eviction,
    )


def _pod_qos(doc: Mapping[str, Any], where: str, index: int) -> PodQOS:
    label_selector = None
    if doc.get("labelSelector") is not None:
        label_selector = _selector(doc.get("labelSelector"), f"{where}.labelSelector")
    scope = None
    if doc.get("scopeSelector") is not None:
        exprs = (doc.get("scopeSelector") or {}).get("matchExpressions") or []
        scope = tuple(_scope(e, f"{where}.scopeSelector.matchExpressions[{j}]") for j, e in enumerate(exprs))
    allowed = tuple(doc.get("allowedActions") or ())
    return PodQOS(name=doc.get("name") or f"podQOS-{index}", label_selector=label_selector, scope=scope,
                  allowed_actions=allowed)


def _unknown_actions(spec: Mapping[str, Any], rules: tuple[Rule, ...]) -> tuple[str, ...]:
    """Check ``allowedActions`` against the actions the rules define.  A throttle or eviction action no podQOS
    allows while a podQOS names an undefined action is a misspelling that would taint the node and act on nothing
    (``allowedActions: [throtle]``): refused, naming the rule.  An undefined name alone, or an action no podQOS
    allows alone, is reported (the returned warnings), not refused: both are valid objects for the API server."""
    defined = {r.action.name for r in rules}
    known = ", ".join(sorted(defined))
    allowed: set[str] = set()
    warnings: list[str] = []
    for i, doc in enumerate(spec.get("podQOS") or ()):
        for k, action in enumerate(doc.get("allowedActions") or ()):
            allowed.add(action)
            if action not in defined:
                warnings.append(f"spec.podQOS[{i}].allowedActions[{k}]: {action!r} is not an action of this policy "
                                f"(its actions: {known})")
    for i, rule in enumerate(rules):
        if rule.action.name in allowed or rule.action.kinds == ("disableScheduling",):
            continue
        what = f"action {rule.action.name!r} ({', '.join(rule.action.kinds)}) is allowed by no podQOS"
        if warnings:  # a misspelt name, most likely
            raise ConfigError(f"{what}, so it would act on no pod; {warnings[0]}",
                              field=f"spec.objectiveEnsurances[{i}].action.name")
        warnings.append(f"spec.objectiveEnsurances[{i}].action.name: {what}: it acts on no pod")
    return tuple(warnings)


def _scope(doc: Mapping[str, Any], where: str) -> ScopeRequirement:
    values = tuple(doc["values"])
    if doc["scopeName"] == "Priority":
        for k, v in enumerate(values):
            if not _PRIORITY_VALUE.match(v):
                raise ConfigError(f"{v!r} is neither N nor an inclusive range A-B", field=f"{where}.values[{k}]")
    return ScopeRequirement(doc["scopeName"], doc["operator"], values)


# -- field helpers ----------------------------------------------------------------------------------------


def _map(raw: Any, where: str, *, required: bool = False) -> Mapping[str, Any]:
    if raw is None:
        if required:
            raise ConfigError("required", field=where)
        return {}
    if not isinstance(raw, Mapping):
        raise ConfigError("expected an object", field=where)
    return raw


def _selector(raw: Any, where: str) -> LabelSelector:
    try:
        return LabelSelector.parse(raw, field=where)
    except SelectorError as exc:
        text = str(exc)
        path, _, message = text.partition(": ")
        raise ConfigError(message or text, field=path if path.startswith(where) else where) from None


def _priority_in(value: str, priority: int) -> bool:
    m = _PRIORITY_VALUE.match(value)
    if m is None:
        return False
    lo = int(m.group(1))
    hi = int(m.group(2)) if m.group(2) is not None else lo
    return lo <= priority <= hi
