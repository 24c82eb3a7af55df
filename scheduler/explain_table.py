"""``loadwise explain -o text``: the report as tables that fit the terminal.

Columns take the width their longest cell needs (node names of any length); the reason column gets what is left
and wraps at word boundaries, so a reason is never cut.  When even that does not fit, the table widens instead of
cutting.  Under each pod's table, one block per node spells out the numbers behind its verdict and scores.
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["render_table", "quantity"]

MIN_WRAP = 24  # the wrapping column never gets narrower than this (the table widens instead)
_BINARY = (("Ti", 1 << 40), ("Gi", 1 << 30), ("Mi", 1 << 20), ("Ki", 1 << 10))


def quantity(resource: str, value: int) -> str:
    """A value as Kubernetes writes it: cpu in millicores, memory in binary units (one decimal), others plain."""
    if resource == "cpu":
        return f"{value}m"
    if resource in ("memory", "ephemeral-storage") and abs(value) >= 1024:
        for suffix, size in _BINARY:
            if abs(value) >= size:
                text = f"{value / size:.1f}".removesuffix(".0")
                return f"{text}{suffix}"
    return str(value)


def _table(headers: Sequence[str], rows: Sequence[Sequence[str]], width: int, wrap: int) -> list[str]:
    """Left-aligned columns; column ``wrap`` wraps its text into the width the others leave."""
    widths = [max([len(h), *(len(r[j]) for r in rows)]) for j, h in enumerate(headers)]
    others = sum(w for j, w in enumerate(widths) if j != wrap) + 2 * (len(headers) - 1)
    widths[wrap] = max(min(widths[wrap], width - others), MIN_WRAP, len(headers[wrap]))
    out: list[str] = []
    for row in [list(headers), *rows]:
        cells = [textwrap.wrap(c, widths[j], break_long_words=False, break_on_hyphens=False) or [""]
                 if j == wrap else [c] for j, c in enumerate(row)]
        for k in range(max(len(c) for c in cells)):
            parts = [(c[k] if k < len(c) else "").ljust(widths[j]) for j, c in enumerate(cells)]
            out.append("  ".join(parts).rstrip())
    return out


def _wrapped(text: str, width: int, indent: str) -> list[str]:
    return textwrap.wrap(text, max(width, MIN_WRAP + len(indent)), initial_indent=indent,
                         subsequent_indent=indent + "    ", break_long_words=False, break_on_hyphens=False)


def _loadaware_line(node: Mapping[str, Any], pod: Mapping[str, Any]) -> list[str]:
    """``cpu: 4000m measured + 4585m estimated (2 pods) + 3400m this pod = 11985m of 16000m = 75% > 65%``."""
    out = []
    alloc = node.get("allocatable", {})
    for r, pct in pod["usedPercent"].items():
        measured = node["measured"].get(r, 0)
        estimated = sum(p.get(r, 0) for p in node["estimatedPods"])
        who = ", ".join(f"{p['pod']} {quantity(r, p.get(r, 0))}" for p in node["estimatedPods"] if p.get(r, 0))
        total = pod["load"].get(r, 0) + pod["podEstimate"].get(r, 0)
        thr = pod["thresholds"].get(r, 0)
        verdict = "no threshold" if not thr else (f"> {thr}% (over)" if pct > thr else f"<= {thr}%")
        parts = [f"{quantity(r, measured)} measured"]
        if estimated:
            parts.append(f"{quantity(r, estimated)} estimated ({who})")
        parts.append(f"{quantity(r, pod['podEstimate'].get(r, 0))} this pod")
        out.append(f"{r}: {' + '.join(parts)} = {quantity(r, total)} of {quantity(r, alloc.get(r, 0))} "
                   f"= {pct}% {verdict}")
    return out


def _node_details(name: str, numbers: Mapping[str, Any], node: Mapping[str, Any], width: int) -> list[str]:
    lines = [f"  {name}:"]
    fit = numbers.get("fit", {})
    if fit:
        text = ", ".join(f"{r} {quantity(r, v['requested'])} + {quantity(r, v['pod'])} of "
                         f"{quantity(r, v['allocatable'])}" for r, v in fit.items())
        lines += _wrapped(f"fit (requested + this pod of allocatable): {text}", width, "    ")
    la, la_node = numbers.get("loadaware"), node.get("loadaware")
    if la and la_node and not la_node["hasNodeMetric"]:
        lines += _wrapped("loadaware: no NodeMetric for this node: not filtered on usage, scored 0", width, "    ")
    elif la and la_node:
        age = (node.get("nodeMetric") or {}).get("ageSeconds")
        head = (f"loadaware ({la['thresholdKind']}, thresholds from {la['thresholdSource']}; NodeMetric "
                f"{f'{age:g}s old' if age is not None else 'never updated'}{', expired' if la_node['expired'] else ''}):")
        lines += _wrapped(head, width, "    ")
        for text in _loadaware_line(la_node, la):
            lines += _wrapped(text, width, "      ")
        for r, cap in la_node["waterlineCaps"].items():
            lines += _wrapped(f"{r} capped at {cap['percent']}% by WaterlinePolicy {cap['policy']} rule "
                              f"{cap['rule']}", width, "      ")
    order = numbers.get("nodeorder")
    if order:
        text = ", ".join(f"{k} {v['score']} x {v['weight']}" for k, v in order.items())
        lines += _wrapped(f"nodeorder (score x weight): {text}", width, "    ")
    return lines


def _pod_lines(key: str, info: Mapping[str, Any], nodes: Mapping[str, Any], width: int) -> list[str]:
    lines = [f"{key} -> {info['node'] or 'pending'}"]
    if info.get("message"):
        lines += _wrapped(info["message"], width, "  ")
    names = list(dict.fromkeys([*info["filter"], *info["total"], *info.get("numbers", {})]))
    plugins = sorted({p for s in info["scores"].values() for p in s})
    rows = []
    for n in names:
        verdict = "; ".join(f"{p}: {r}" for p, r in info["filter"].get(n, {}).items()) or "passes"
        scores = info["scores"].get(n, {})
        rows.append([n, verdict, *(str(scores.get(p, "")) for p in plugins), str(info["total"].get(n, ""))])
    if rows:
        lines += ["  " + r for r in _table(["NODE", "FILTER", *(p.upper() for p in plugins), "TOTAL"], rows,
                                           width - 2, 1)]
    for n in names:
        lines += _node_details(n, info.get("numbers", {}).get(n, {}), nodes.get(n, {}), width)
    return lines


def render_table(report: Mapping[str, Any], width: int = 100) -> str:
    """The whole report for a terminal ``width`` columns wide."""
    lines: list[str] = []
    for key, info in report["pods"].items():
        lines += _pod_lines(key, info, report.get("nodes", {}), width)
    if report["evictions"]:
        lines.append("evictions: " + ", ".join(report["evictions"]))
    for group, phase in report["podGroupPhases"].items():
        lines.append(f"podgroup {group}: {phase}")
    skipped = report.get("notConsidered", [])
    if skipped:
        lines.append(f"not considered ({len(skipped)} pending pod(s) of other schedulers):")
        for p in skipped:
            lines += _wrapped(f"{p['pod']}: {p['reason']}", width, "  ")
    for w in report.get("warnings", []):
        lines += _wrapped(f"warning: {w}", width, "")
    if not report["pods"] and not skipped:
        lines.append("no pending pods in the snapshot")
    return "\n".join(lines)
