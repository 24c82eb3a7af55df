"""The agent's configuration file, validated against its JSON Schema: errors name the field and the file.

A YAML or JSON mapping whose one definition is ``agent/config.schema.yaml`` (keys, types, ranges, enums,
defaults and descriptions; docs/configure.md section 1 is rendered from it).  Every key is optional, a key left
empty takes its default, and an unknown key is refused (a typo must not silently fall back to a default).
``metricCollectPolicy`` is the NodeMetric CRD's ``spec.metricCollectPolicy``, referred to from the CRD rather
than copied.  The dataclasses below carry the same defaults as the schema (a test compares them), so code that
builds a config without a file gets what an empty file gives.  The running agent re-reads a changed file (``agent/reload.py``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from agent.nodemetric import MetricCollectPolicy
from common import crdschema
from common.config import ConfigError, load_document

__all__ = ["AgentConfig", "WaterlineConfig", "DEFAULT_PORT", "DEFAULT_DEBUG_PORT", "SCHEMA_FILE", "schema", "field_name"]

DEFAULT_PORT = 9326
DEFAULT_DEBUG_PORT = 9328
SCHEMA_FILE = "config.schema.yaml"


@dataclass(frozen=True, slots=True)
class WaterlineConfig:
    enabled: bool = True
    dry_run: bool = False
    interval_seconds: float = 10.0
    policy_file: str = ""


@dataclass(frozen=True, slots=True)
class AgentConfig:
    node_name: str = ""
    collect_interval_seconds: float = 1.0
    proc_root: str = "/proc"
    cgroup_root: str = "/sys/fs/cgroup"
    cgroup_parent: str = ""
    cgroup_version: str = "auto"
    cgroup_driver: str = "auto"
    collect_containers: bool = True
    pressure: bool = True
    listen_address: str = "0.0.0.0"
    port: int = DEFAULT_PORT
    debug_address: str = "127.0.0.1"
    debug_port: int = DEFAULT_DEBUG_PORT
    pod_metrics: bool = True
    report_retry_initial_seconds: float = 1.0
    report_retry_max_seconds: float = 30.0
    report_jitter_fraction: float = 0.1
    metric_collect_policy: MetricCollectPolicy = field(default_factory=MetricCollectPolicy)
    waterline: WaterlineConfig = field(default_factory=WaterlineConfig)
    source: str = ""

    @property
    def rate_ttl_seconds(self) -> float:
        """How long a counter's last reading is kept: container counters are read once per waterline interval,
        so their rates must outlive it."""
        return max(20 * self.collect_interval_seconds, 3 * self.waterline.interval_seconds)

    @classmethod
    def load(cls, path: str | Path) -> AgentConfig:
        doc = load_document(path)
        return cls.from_mapping(doc if doc is not None else {}, source=str(path))

    @classmethod
    def from_mapping(cls, doc: Any, *, source: str = "") -> AgentConfig:
        """Validate ``doc`` against the schema, then build the config; ``source`` names the file in errors."""
        if not isinstance(doc, Mapping):
            raise ConfigError("expected a mapping of settings", source=source)
        doc = _present(doc)
        if isinstance(doc.get("waterline"), Mapping):
            doc = {**doc, "waterline": _present(doc["waterline"])}
        crdschema.raise_first(_validator(), doc, source=source)
        nested = {"metricCollectPolicy", "waterline"}
        cfg = cls(
            **_fields(cls, {k: v for k, v in doc.items() if k not in nested}),
            metric_collect_policy=_collect_policy(doc.get("metricCollectPolicy"), source),
            waterline=WaterlineConfig(**_fields(WaterlineConfig, doc.get("waterline", {}))),
            source=source,
        )
        if cfg.report_retry_max_seconds < cfg.report_retry_initial_seconds:
            raise ConfigError(
                "must be at least reportRetryInitialSeconds", field="reportRetryMaxSeconds", source=source
            )
        return cfg


@cache
def schema() -> dict[str, Any]:
    """The config file's JSON Schema, shipped with the package as ``agent/config.schema.yaml``."""
    text = resources.files("agent").joinpath(SCHEMA_FILE).read_text(encoding="utf-8")
    return dict(yaml.safe_load(text))


def _finite_number(checker: Any, instance: Any) -> bool:
    """A number that is not YAML's ``.nan`` or ``.inf`` (every range check is false for NaN)."""
    number = jsonschema.Draft202012Validator.TYPE_CHECKER.is_type(instance, "number")
    return bool(number and math.isfinite(instance))


_Validator = jsonschema.validators.extend(
    jsonschema.Draft202012Validator,
    type_checker=jsonschema.Draft202012Validator.TYPE_CHECKER.redefine("number", _finite_number),
)


@cache
def _validator() -> jsonschema.protocols.Validator:
    s = schema()
    _Validator.check_schema(s)
    return _Validator(s, registry=crdschema.REGISTRY)


def _present(doc: Mapping[Any, Any]) -> dict[Any, Any]:
    """The keys given a value: ``port:`` left empty (null) takes the default, as if it were absent."""
    return {k: v for k, v in doc.items() if v is not None}


def field_name(key: str) -> str:
    """The dataclass field a config key sets: ``collectIntervalSeconds`` -> ``collect_interval_seconds``."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", key).lower()


def _fields(cls: type[Any], doc: Mapping[str, Any]) -> dict[str, Any]:
    """Validated ``camelCase`` keys as the dataclass's keyword arguments; numbers where it holds floats as floats."""
    defaults = {f.name: f.default for f in fields(cls)}
    out = {}
    for key, value in doc.items():
        name = field_name(key)
        out[name] = float(value) if isinstance(defaults[name], float) else value
    return out


def _collect_policy(raw: Any, source: str) -> MetricCollectPolicy:
    """The NodeMetric spec's parser builds the policy; its fields are named from ``spec.``, here from the top."""
    try:
        return MetricCollectPolicy.from_spec({"metricCollectPolicy": raw}, source=source)
    except ConfigError as exc:
        raise ConfigError(exc.message, field=exc.field.removeprefix("spec."), source=source) from None
