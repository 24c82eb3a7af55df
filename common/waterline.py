"""The ``qos.loadwise.io/v1alpha1`` WaterlinePolicy as a typed, validated value (docs/design/waterline.md §1).

One object merges crane's NodeQOS (node selector and rules), the AvoidanceAction each rule names (inlined
as ``action``) and the PodQOS objects that choose candidate pods.  It is parsed once from the Kubernetes
dict; every rejection is a :class:`ConfigError` whose ``field`` is the path inside the object, for example
``spec.objectiveEnsurances[0].avoidanceThreshold``, so the agent can report it in an Event and a status
condition and keep running the last valid version.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from fractions import Fraction
from typing import Any

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
]

# Every metric name docs/design/waterline.md §2.1 lists; the webhook's narrower list is an upstream accident.
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
    }
)

DRY_RUN_ANNOTATION = "qos.loadwise.io/dry-run"
STRATEGIES = ("None", "Preview")
SCOPE_NAMES = ("QOSClass", "Priority", "Namespace")
_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
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
    meta = _map(obj.get("metadata"), "metadata", required=True)
    name = meta.get("name")
    if not isinstance(name, str) or not name:
        raise ConfigError("required", field="metadata.name")
    annotations = _map(meta.get("annotations"), "metadata.annotations")
    dry_raw = annotations.get(DRY_RUN_ANNOTATION)
    if dry_raw is not None and str(dry_raw).lower() not in ("true", "false"):
        raise ConfigError("must be \"true\" or \"false\"", field=f"metadata.annotations[{DRY_RUN_ANNOTATION}]")
    spec = _map(obj.get("spec"), "spec", required=True)

    node_selector = _selector(spec.get("nodeSelector"), "spec.nodeSelector")
    excess = _percent(spec.get("executeExcess", "10%"), "spec.executeExcess")

    rules_raw = spec.get("objectiveEnsurances")
    if not isinstance(rules_raw, list) or not rules_raw:
        raise ConfigError("must be a non-empty list", field="spec.objectiveEnsurances")
    rules: list[Rule] = []
    seen_rules: set[str] = set()
    actions: dict[str, tuple[Action, str]] = {}
    for i, raw in enumerate(rules_raw):
        where = f"spec.objectiveEnsurances[{i}]"
        rule = _rule(raw, where)
        if rule.name in seen_rules:
            raise ConfigError(f"duplicate rule name {rule.name!r}", field=f"{where}.name")
        seen_rules.add(rule.name)
        prev = actions.get(rule.action.name)
        if prev is not None and prev[0] != rule.action:
            raise ConfigError(
                f"action {rule.action.name!r} is also defined by {prev[1]} with a different body",
                field=f"{where}.action",
            )
        actions.setdefault(rule.action.name, (rule.action, where))
        rules.append(rule)

    pod_qos_raw = spec.get("podQOS")
    if pod_qos_raw is None:
        pod_qos_raw = []
    if not isinstance(pod_qos_raw, list):
        raise ConfigError("expected a list", field="spec.podQOS")
    pod_qos = tuple(_pod_qos(p, f"spec.podQOS[{i}]", i) for i, p in enumerate(pod_qos_raw))

    generation = meta.get("generation", 0)
    return WaterlinePolicy(
        name=name,
        node_selector=node_selector,
        execute_excess=excess,
        rules=tuple(rules),
        pod_qos=pod_qos,
        dry_run=str(dry_raw).lower() == "true" if dry_raw is not None else False,
        uid=str(meta.get("uid", "")),
        generation=generation if isinstance(generation, int) and not isinstance(generation, bool) else 0,
        raw=obj,
    )


def _rule(raw: Any, where: str) -> Rule:
    doc = _map(raw, where, required=True)
    name = _label_name(doc.get("name"), f"{where}.name")
    mr = _map(doc.get("metricRule"), f"{where}.metricRule", required=True)
    metric_name = mr.get("name")
    if not isinstance(metric_name, str) or not metric_name:
        raise ConfigError("required", field=f"{where}.metricRule.name")
    if metric_name not in KNOWN_METRICS:
        raise ConfigError(f"unknown metric {metric_name!r}; known: {', '.join(sorted(KNOWN_METRICS))}",
                          field=f"{where}.metricRule.name")
    if "value" not in mr or mr.get("value") is None or isinstance(mr.get("value"), bool):
        raise ConfigError("required", field=f"{where}.metricRule.value")
    try:
        value = parse_quantity(mr["value"], field=f"{where}.metricRule.value")
    except ValueError as exc:
        raise ConfigError(str(exc).split(": ", 1)[-1], field=f"{where}.metricRule.value") from None
    if value <= 0:
        raise ConfigError("must be greater than 0", field=f"{where}.metricRule.value")
    selector = _selector(mr.get("selector"), f"{where}.metricRule.selector")
    strategy = doc.get("strategy", "None")
    if strategy is None:
        strategy = "None"
    if strategy not in STRATEGIES:
        raise ConfigError(f"{strategy!r} is not one of None, Preview", field=f"{where}.strategy")
    return Rule(
        name=name,
        metric=MetricRule(metric_name, value, selector),
        action=_action(doc.get("action"), f"{where}.action"),
        avoidance_threshold=_positive(doc, "avoidanceThreshold", where, default=1),
        restore_threshold=_positive(doc, "restoreThreshold", where, default=1),
        strategy=str(strategy),
    )


def _action(raw: Any, where: str) -> Action:
    doc = _map(raw, where, required=True)
    name = _label_name(doc.get("name"), f"{where}.name")
    description = doc.get("description", "")
    if description is None:
        description = ""
    if not isinstance(description, str):
        raise ConfigError("expected a string", field=f"{where}.description")
    if len(description) > 1024:
        raise ConfigError("must be at most 1024 characters", field=f"{where}.description")
    throttle = None
    if "throttle" in doc:
        t = _map(doc.get("throttle"), f"{where}.throttle")
        cpu = _map(t.get("cpuThrottle"), f"{where}.throttle.cpuThrottle")
        mem = _map(t.get("memoryThrottle"), f"{where}.throttle.memoryThrottle")
        force_gc = mem.get("forceGC", False)
        if not isinstance(force_gc, bool):
            raise ConfigError("expected true or false", field=f"{where}.throttle.memoryThrottle.forceGC")
        throttle = Throttle(
            cpu=CpuThrottle(
                min_cpu_ratio=_ratio(cpu.get("minCPURatio"), f"{where}.throttle.cpuThrottle.minCPURatio"),
                step_cpu_ratio=_ratio(cpu.get("stepCPURatio"), f"{where}.throttle.cpuThrottle.stepCPURatio"),
            ),
            force_gc=force_gc,
        )
    eviction = None
    if "eviction" in doc:
        e = _map(doc.get("eviction"), f"{where}.eviction")
        grace = e.get("terminationGracePeriodSeconds")
        if grace is not None:
            grace = _int(grace, f"{where}.eviction.terminationGracePeriodSeconds")
            if grace < 0:
                raise ConfigError("must be >= 0", field=f"{where}.eviction.terminationGracePeriodSeconds")
        eviction = Eviction(grace)
    return Action(
        name=name,
        cool_down_seconds=_positive(doc, "coolDownSeconds", where, default=300),
        description=description,
        throttle=throttle,
        eviction=eviction,
    )


def _pod_qos(raw: Any, where: str, index: int) -> PodQOS:
    doc = _map(raw, where, required=True)
    name = doc.get("name", f"podQOS-{index}")
    if not isinstance(name, str):
        raise ConfigError("expected a string", field=f"{where}.name")
    label_selector = None
    if doc.get("labelSelector") is not None:
        label_selector = _selector(doc.get("labelSelector"), f"{where}.labelSelector")
    scope = None
    if doc.get("scopeSelector") is not None:
        ss = _map(doc.get("scopeSelector"), f"{where}.scopeSelector")
        exprs = ss.get("matchExpressions") or []
        if not isinstance(exprs, list):
            raise ConfigError("expected a list", field=f"{where}.scopeSelector.matchExpressions")
        reqs: list[ScopeRequirement] = []
        for j, e in enumerate(exprs):
            ew = f"{where}.scopeSelector.matchExpressions[{j}]"
            ed = _map(e, ew, required=True)
            scope_name = ed.get("scopeName")
            if not isinstance(scope_name, str) or not scope_name:
                raise ConfigError("required", field=f"{ew}.scopeName")
            op = ed.get("operator")
            if op not in ("In", "NotIn"):
                raise ConfigError(f"{op!r} is not one of In, NotIn", field=f"{ew}.operator")
            values = ed.get("values")
            if not isinstance(values, list) or not values:
                raise ConfigError(f"must be non-empty for operator {op}", field=f"{ew}.values")
            str_values = tuple(str(v) for v in values)
            if scope_name == "Priority":
                for k, v in enumerate(str_values):
                    if not _PRIORITY_VALUE.match(v):
                        raise ConfigError(f"{v!r} is neither N nor an inclusive range A-B", field=f"{ew}.values[{k}]")
            reqs.append(ScopeRequirement(scope_name, str(op), str_values))
        scope = tuple(reqs)
    allowed = doc.get("allowedActions") or []
    if not isinstance(allowed, list) or not all(isinstance(a, str) for a in allowed):
        raise ConfigError("expected a list of action names", field=f"{where}.allowedActions")
    return PodQOS(name=name, label_selector=label_selector, scope=scope, allowed_actions=tuple(allowed))


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


def _label_name(raw: Any, where: str) -> str:
    if raw is None or raw == "":
        raise ConfigError("required", field=where)
    if not isinstance(raw, str):
        raise ConfigError("expected a string", field=where)
    if len(raw) > 63 or not _DNS1123_LABEL.match(raw):
        raise ConfigError(f"{raw!r} is not a DNS-1123 label (lower-case alphanumerics and '-', at most 63)",
                          field=where)
    return raw


def _int(raw: Any, where: str) -> int:
    if isinstance(raw, bool) or not isinstance(raw, int):
        raise ConfigError("expected an integer", field=where)
    return raw


def _positive(doc: Mapping[str, Any], key: str, where: str, *, default: int) -> int:
    """Absent means the default; an explicit 0 or a negative number is rejected (crane's webhook)."""
    if key not in doc or doc[key] is None:
        return default
    value = _int(doc[key], f"{where}.{key}")
    if value <= 0:
        raise ConfigError("must be >= 1 (an explicit 0 is rejected)", field=f"{where}.{key}")
    return value


def _ratio(raw: Any, where: str) -> int:
    if raw is None:
        return 0
    value = _int(raw, where)
    if not 0 <= value <= 100:
        raise ConfigError("must be between 0 and 100", field=where)
    return value


def _percent(raw: Any, where: str) -> Fraction:
    """``"10%"`` -> 1/10.  A bare number is read as a percent too, the way the agent flag reads."""
    if isinstance(raw, bool):
        raise ConfigError("expected a percent such as \"10%\"", field=where)
    text = str(raw).strip()
    number = text[:-1].strip() if text.endswith("%") else text
    try:
        pct = Fraction(Decimal(number))
    except (InvalidOperation, ValueError, OverflowError):
        raise ConfigError(f"{raw!r} is not a percent such as \"10%\"", field=where) from None
    if not 0 <= pct <= 100:
        raise ConfigError("must be between 0% and 100%", field=where)
    return pct / 100


def _priority_in(value: str, priority: int) -> bool:
    m = _PRIORITY_VALUE.match(value)
    if m is None:
        return False
    lo = int(m.group(1))
    hi = int(m.group(2)) if m.group(2) is not None else lo
    return lo <= priority <= hi
