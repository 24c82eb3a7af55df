"""The agent's configuration file: every field validated, errors naming the field and the file.

A YAML or JSON document; every key is optional and unknown keys are rejected (a typo must not
silently fall back to a default)::

    nodeName: ""                    # default: --node, then $NODE_NAME, then the host name
    collectIntervalSeconds: 1       # koordlet's --collect-res-used-interval
    procRoot: /proc                 # /host/proc when the host's procfs is mounted into the pod
    cgroupRoot: /sys/fs/cgroup      # /host-cgroup in a container, as koordlet
    cgroupParent: ""                # kubelet's --cgroup-root when it is not the top of the hierarchy
    cgroupVersion: auto             # auto | v1 | v2
    cgroupDriver: auto              # auto | systemd | cgroupfs
    collectContainers: true         # per-container CPU and quota (needed by the waterline engine)
    pressure: true                  # PSI: node /proc/pressure, and per pod on cgroup v2 (where the kernel has it)
    listenAddress: 0.0.0.0
    port: 9326                      # /metrics, /healthz, /readyz
    debugAddress: 127.0.0.1         # /debug/state and /nodemetric (pod names and usage): localhost only ...
    debugPort: 9328                 # ... reached with kubectl port-forward; 0 turns them off
    podMetrics: true                # per-pod gauges on /metrics (cardinality = pods on the node)
    reportRetryInitialSeconds: 1    # a failed NodeMetric report is retried with doubling delays ...
    reportRetryMaxSeconds: 30       # ... capped here (and never later than the next regular report)
    reportJitterFraction: 0.1       # spread reports of many nodes over ±10 % of the interval
    metricCollectPolicy:            # used standalone and when creating a missing NodeMetric
      aggregateDurationSeconds: 300
      reportIntervalSeconds: 60
      nodeAggregatePolicy: {durations: [5m, 10m, 30m]}
      nodeMemoryCollectPolicy: usageWithoutPageCache
    waterline:
      enabled: true
      dryRun: false                 # standalone mode is always dry-run
      intervalSeconds: 10           # crane-agent's collect interval
      policyFile: ""                # WaterlinePolicy objects to use instead of watching the API
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent.nodemetric import MetricCollectPolicy
from common.config import ConfigError, load_document

__all__ = ["AgentConfig", "WaterlineConfig", "DEFAULT_PORT", "DEFAULT_DEBUG_PORT", "CONFIG_KEYS"]

DEFAULT_PORT = 9326
DEFAULT_DEBUG_PORT = 9328


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

    @classmethod
    def load(cls, path: str | Path) -> AgentConfig:
        doc = load_document(path)
        return cls.from_mapping(doc if doc is not None else {}, source=str(path))

    @classmethod
    def from_mapping(cls, doc: Any, *, source: str = "") -> AgentConfig:
        if not isinstance(doc, Mapping):
            raise ConfigError("expected a mapping of settings", source=source)
        r = _Reader(doc, "", source)
        try:
            policy = MetricCollectPolicy.from_spec({"metricCollectPolicy": doc.get("metricCollectPolicy")}, source=source)
        except ConfigError as exc:
            # from_spec names fields from "spec."; in this file they sit at the top level.
            fld = exc.field.removeprefix("spec.")
            raise ConfigError(str(exc).split(f"{exc.field}: ", 1)[-1], field=fld, source=source) from None
        wl_doc = doc.get("waterline")
        if wl_doc is None:
            wl_doc = {}
        if not isinstance(wl_doc, Mapping):
            raise ConfigError("expected a mapping", field="waterline", source=source)
        w = _Reader(wl_doc, "waterline.", source)
        waterline = WaterlineConfig(
            enabled=w.boolean("enabled", True),
            dry_run=w.boolean("dryRun", False),
            interval_seconds=w.number("intervalSeconds", 10.0, minimum=0.1),
            policy_file=w.string("policyFile", ""),
        )
        w.no_unknown({"enabled", "dryRun", "intervalSeconds", "policyFile"})
        cfg = cls(
            node_name=r.string("nodeName", ""),
            collect_interval_seconds=r.number("collectIntervalSeconds", 1.0, minimum=0.1, maximum=60.0),
            proc_root=r.string("procRoot", "/proc", required=True),
            cgroup_root=r.string("cgroupRoot", "/sys/fs/cgroup", required=True),
            cgroup_parent=r.string("cgroupParent", ""),
            cgroup_version=r.choice("cgroupVersion", "auto", ("auto", "v1", "v2")),
            cgroup_driver=r.choice("cgroupDriver", "auto", ("auto", "systemd", "cgroupfs")),
            collect_containers=r.boolean("collectContainers", True),
            pressure=r.boolean("pressure", True),
            listen_address=r.string("listenAddress", "0.0.0.0", required=True),
            port=int(r.number("port", DEFAULT_PORT, minimum=0, maximum=65535, integer=True)),
            debug_address=r.string("debugAddress", "127.0.0.1", required=True),
            debug_port=int(r.number("debugPort", DEFAULT_DEBUG_PORT, minimum=0, maximum=65535, integer=True)),
            pod_metrics=r.boolean("podMetrics", True),
            report_retry_initial_seconds=r.number("reportRetryInitialSeconds", 1.0, minimum=0.01),
            report_retry_max_seconds=r.number("reportRetryMaxSeconds", 30.0, minimum=0.01),
            report_jitter_fraction=r.number("reportJitterFraction", 0.1, minimum=0.0, maximum=0.5),
            metric_collect_policy=policy,
            waterline=waterline,
            source=source,
        )
        r.no_unknown(CONFIG_KEYS)
        if cfg.report_retry_max_seconds < cfg.report_retry_initial_seconds:
            raise ConfigError(
                "must be at least reportRetryInitialSeconds", field="reportRetryMaxSeconds", source=source
            )
        return cfg


CONFIG_KEYS = {
    "nodeName",
    "collectIntervalSeconds",
    "procRoot",
    "cgroupRoot",
    "cgroupParent",
    "cgroupVersion",
    "cgroupDriver",
    "collectContainers",
    "pressure",
    "listenAddress",
    "port",
    "debugAddress",
    "debugPort",
    "podMetrics",
    "reportRetryInitialSeconds",
    "reportRetryMaxSeconds",
    "reportJitterFraction",
    "metricCollectPolicy",
    "waterline",
}


class _Reader:
    """Typed reads of one mapping; every error carries ``prefix + key`` and the file."""

    def __init__(self, doc: Mapping[str, Any], prefix: str, source: str) -> None:
        self.doc = doc
        self.prefix = prefix
        self.source = source

    def _err(self, key: str, message: str) -> ConfigError:
        return ConfigError(message, field=self.prefix + key, source=self.source)

    def string(self, key: str, default: str, *, required: bool = False) -> str:
        v = self.doc.get(key)
        if v is None:
            return default
        if not isinstance(v, str):
            raise self._err(key, f"expected a string, got {type(v).__name__}")
        if required and not v:
            raise self._err(key, "must not be empty")
        return v

    def choice(self, key: str, default: str, allowed: tuple[str, ...]) -> str:
        v = self.string(key, default)
        if v not in allowed:
            raise self._err(key, f"{v!r} is not one of {', '.join(allowed)}")
        return v

    def boolean(self, key: str, default: bool) -> bool:
        v = self.doc.get(key)
        if v is None:
            return default
        if not isinstance(v, bool):
            raise self._err(key, f"expected true or false, got {v!r}")
        return v

    def number(
        self, key: str, default: float, *, minimum: float | None = None, maximum: float | None = None, integer: bool = False
    ) -> float:
        v = self.doc.get(key)
        if v is None:
            return default
        if isinstance(v, bool) or not isinstance(v, int | float) or (integer and not isinstance(v, int)):
            raise self._err(key, f"expected {'an integer' if integer else 'a number'}, got {v!r}")
        if not math.isfinite(v):
            raise self._err(key, f"expected a finite number, got {v!r}")
        if minimum is not None and v < minimum:
            raise self._err(key, f"must be at least {minimum:g}, got {v!r}")
        if maximum is not None and v > maximum:
            raise self._err(key, f"must be at most {maximum:g}, got {v!r}")
        return float(v)

    def no_unknown(self, known: set[str]) -> None:
        for k in self.doc:
            if k not in known:
                raise self._err(str(k), f"unknown field (known: {', '.join(sorted(known))})")
