"""Every Prometheus metric the code exports, read from the code: each ``prometheus_client`` constructor
(``Gauge``, ``Counter``, ``Histogram``, ``Summary``, ``Info``, ``Enum`` and the ``*MetricFamily`` classes)
in agent/, scheduler/, rebalancer/, common/ and loadwise/, with its type, help text and label names.  A name passed
through a helper (``gauge("loadwise_…", …)``) is resolved from the helper's callers.

Sample names follow prometheus_client: a counter ``x`` (or ``x_total``) is exposed as ``x_total``, a
histogram as ``x_bucket``/``x_sum``/``x_count``, a summary as ``x_sum``/``x_count``, an info as ``x_info``.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.deploy.api_calls import ROOT, _module, _strings

__all__ = ["MetricFamily", "exported_families", "sample_names"]

PACKAGES = ("agent", "scheduler", "rebalancer", "common", "loadwise")
_CTORS = {
    "Gauge": "gauge",
    "Counter": "counter",
    "Histogram": "histogram",
    "Summary": "summary",
    "Info": "info",
    "Enum": "stateset",
    "GaugeMetricFamily": "gauge",
    "CounterMetricFamily": "counter",
    "HistogramMetricFamily": "histogram",
    "SummaryMetricFamily": "summary",
    "InfoMetricFamily": "info",
}


@dataclass(frozen=True, slots=True)
class MetricFamily:
    name: str  # as exposed in # TYPE (counters without _total)
    type: str
    help: str
    labels: tuple[str, ...]
    where: str

    @property
    def samples(self) -> set[str]:
        n = self.name
        return {
            "gauge": {n},
            "counter": {f"{n}_total"},
            "histogram": {f"{n}_bucket", f"{n}_sum", f"{n}_count"},
            "summary": {f"{n}_sum", f"{n}_count", n},
            "info": {f"{n}_info"},
            "stateset": {n},
        }[self.type]


def _prometheus_names(tree: ast.Module) -> set[str]:
    """The constructor names this module imports from prometheus_client (so collections.Counter is not one)."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("prometheus_client"):
            out.update(a.asname or a.name for a in node.names if a.name in _CTORS)
    return out


def _labels(call: ast.Call, kind: str) -> tuple[str, ...]:
    raw = None
    for kw in call.keywords:
        if kw.arg in ("labelnames", "labels"):
            raw = kw.value
    if raw is None and len(call.args) > 2 and not kind.endswith("MetricFamily"):
        raw = call.args[2]
    if isinstance(raw, ast.List | ast.Tuple):
        return tuple(e.value for e in raw.elts if isinstance(e, ast.Constant) and isinstance(e.value, str))
    return ()


def _direct(mod: Any, call: ast.Call) -> set[tuple[str, str]]:
    names = _strings(mod, call.args[0], call) or set()
    helps = _strings(mod, call.args[1], call) if len(call.args) > 1 else {""}
    help_text = next(iter(helps)) if helps and len(helps) == 1 else ""
    return {(n, help_text) for n in names}


def _through_helper(mod: Any, call: ast.Call) -> set[tuple[str, str]]:
    """``def gauge(name, doc, …): GaugeMetricFamily(name, doc, …)`` called as ``gauge("x", "help", …)``."""
    if not (isinstance(call.args[0], ast.Name) and len(call.args) > 1 and isinstance(call.args[1], ast.Name)):
        return set()
    for fn in mod.enclosing(call, ast.FunctionDef):
        params = [a.arg for a in fn.args.args]
        if call.args[0].id not in params or call.args[1].id not in params:
            continue
        i, j = params.index(call.args[0].id), params.index(call.args[1].id)
        out = set()
        for site in ast.walk(mod.tree):
            if isinstance(site, ast.Call) and isinstance(site.func, ast.Name) and site.func.id == fn.name:
                a, b = site.args[i], site.args[j]
                if isinstance(a, ast.Constant) and isinstance(b, ast.Constant):
                    out.add((str(a.value), str(b.value)))
        return out
    return set()


def exported_families() -> list[MetricFamily]:
    out: list[MetricFamily] = []
    unresolved: list[str] = []
    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            mod = _module(Path(path))
            ctors = _prometheus_names(mod.tree)
            for node in ast.walk(mod.tree):
                if not isinstance(node, ast.Call) or not node.args:
                    continue
                f = node.func
                name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
                if name not in ctors:
                    continue
                where = f"{path.relative_to(ROOT)}:{node.lineno}"
                kind = _CTORS[name]
                pairs = _through_helper(mod, node) or _direct(mod, node)
                if not pairs:
                    unresolved.append(f"{where}: {ast.unparse(node.args[0])}")
                    continue
                for metric, help_text in sorted(pairs):
                    if kind == "counter":
                        metric = metric.removesuffix("_total")
                    out.append(MetricFamily(metric, kind, help_text, _labels(node, name), where))
    if unresolved:
        raise ValueError(f"metric names that cannot be read from the code: {unresolved}")
    return out


def sample_names() -> set[str]:
    return {s for f in exported_families() for s in f.samples}
