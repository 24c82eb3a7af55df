"""The self-contained HTML report: tables, definitions and PNG plots embedded as base64 (matplotlib, Agg).

One file, no external assets, so it can be attached to an issue or opened from a CI artifact.
"""

from __future__ import annotations

import base64
import html
import io
from collections.abc import Mapping, Sequence
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.ticker import FuncFormatter  # noqa: E402

from sim.measures import DEFINITIONS, Measures, comparison, table  # noqa: E402
from sim.record import RunRecord  # noqa: E402

__all__ = ["render_html", "plot_heatmaps", "plot_hotspots", "plot_bars", "plot_cluster", "waits_html", "waiting_html",
           "plot_hours", "clock_axis"]

_COLORS = ("#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8172b3", "#937860")


def _png(fig: Any) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90, bbox_inches="tight")
    plt.close(fig)
    return base64.b64encode(buf.getvalue()).decode("ascii")


def _start_hour(rec: RunRecord) -> float:
    """The simulated time of day the run starts at, in hours (its clock starts on a UTC midnight)."""
    return (rec.start_time % 86400.0) / 3600.0


def plot_hours(rec: RunRecord) -> np.ndarray:
    """Each tick's simulated time of day in hours (past 24 for a run that goes through midnight)."""
    return _start_hour(rec) + np.arange(rec.ticks) * rec.tick_seconds / 3600.0


def clock_axis(ax: Any) -> None:
    """Label the x axis with the simulated time of day (``14:00``), wrapping at midnight."""
    def fmt(x: float, _pos: int) -> str:
        minutes = int(round(x * 60.0)) % (24 * 60)
        return f"{minutes // 60:02d}:{minutes % 60:02d}"

    ax.xaxis.set_major_formatter(FuncFormatter(fmt))
    ax.set_xlabel("simulated time of day")


def plot_heatmaps(records: Sequence[RunRecord]) -> str:
    """CPU utilisation of every node over time, one panel per policy, same colour scale."""
    n = len(records)
    fig, axes = plt.subplots(n, 1, figsize=(11, 2.6 * n + 0.6), squeeze=False, sharex=True)
    first = records[0]
    order = np.lexsort((first.cpu_allocatable, np.array(first.node_types)))
    image = None
    for ax, rec in zip(axes[:, 0], records, strict=True):
        start = _start_hour(rec)
        image = ax.imshow(
            100.0 * rec.cpu_util[order], aspect="auto", interpolation="nearest", cmap="inferno", vmin=0, vmax=100,
            extent=(start, start + rec.ticks * rec.tick_seconds / 3600.0, len(order), 0),
        )
        ax.set_ylabel("node")
        ax.set_title(f"{rec.policy}: node CPU usage, % of allocatable", fontsize=10, loc="left")
    clock_axis(axes[-1, 0])
    if image is not None:
        fig.colorbar(image, ax=axes[:, 0].tolist(), shrink=0.9, label="% (hotspot above 65)")
    return _png(fig)


def plot_hotspots(records: Sequence[RunRecord]) -> str:
    """Number of hot nodes at each tick, per policy."""
    fig, ax = plt.subplots(figsize=(11, 3.4))
    for i, rec in enumerate(records):
        hot = ((rec.cpu_util > rec.hotspot_cpu_percent / 100) | (rec.mem_util > rec.hotspot_memory_percent / 100)).sum(axis=0)
        ax.plot(plot_hours(rec), hot, label=rec.policy, color=_COLORS[i % len(_COLORS)], linewidth=1.2)
    clock_axis(ax)
    ax.set_ylabel("hot nodes")
    ax.set_title("Hotspots over time (CPU > 65% or memory > 95% of allocatable)", fontsize=10, loc="left")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    return _png(fig)


def plot_cluster(records: Sequence[RunRecord]) -> str:
    """Cluster CPU utilisation and pending pods over time."""
    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(11, 5), sharex=True)
    for i, rec in enumerate(records):
        color = _COLORS[i % len(_COLORS)]
        util = (rec.cpu_util * rec.cpu_allocatable[:, None]).sum(axis=0) / rec.cpu_allocatable.sum()
        ax1.plot(plot_hours(rec), 100 * util, label=rec.policy, color=color, linewidth=1.2)
        ax2.plot(plot_hours(rec), rec.pending, label=rec.policy, color=color, linewidth=1.2)
    ax1.set_ylabel("cluster CPU %")
    ax1.set_ylim(bottom=0)
    ax2.set_ylabel("pending pods")
    ax2.set_ylim(0, max(1, max((int(r.pending.max()) if r.pending.size else 0) for r in records)) * 1.1)
    clock_axis(ax2)
    ax1.legend(fontsize=8)
    for ax in (ax1, ax2):
        ax.grid(alpha=0.3)
    return _png(fig)


def plot_bars(results: Sequence[Measures]) -> str:
    """Per-policy bars of the headline measures."""
    panels = (
        ("hotspot node-minutes", "hotspot_node_minutes"),
        ("p99 node CPU %", "p99_cpu_percent"),
        ("spread of node CPU (pts)", "spread_cpu_points"),
        ("pods scheduled", "pods_scheduled"),
        ("evictions", "evictions"),
        ("throttle-minutes", "throttle_minutes"),
    )
    fig, axes = plt.subplots(1, len(panels), figsize=(13, 3.2))
    names = [m.policy for m in results]
    for ax, (title, attr) in zip(axes, panels, strict=True):
        values = [float(getattr(m, attr)) for m in results]
        bars = ax.bar(range(len(values)), values, color=[_COLORS[i % len(_COLORS)] for i in range(len(values))])
        ax.bar_label(bars, labels=[f"{v:,.0f}" if v >= 10 or v == int(v) else f"{v:.1f}" for v in values], fontsize=7)
        ax.set_ylim(0, max(max(values), 1.0) * 1.15)  # all zero (no evictions): a 0-1 axis, not -0.05..0.05
        ax.set_title(title, fontsize=9)
        ax.set_xticks(range(len(values)), names, rotation=30, ha="right", fontsize=7)
        ax.tick_params(axis="y", labelsize=7)
    fig.tight_layout()
    return _png(fig)


def _table_html(rows: Sequence[Sequence[str]]) -> str:
    head = "".join(f"<th>{html.escape(c)}</th>" for c in rows[0])
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in rows[1:]
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def waits_html(records: Sequence[RunRecord]) -> str:
    """Who waited to be bound: per policy and class of pod (service, batch job of one, gang member, best-effort),
    the bindings, the share that waited beyond their arrival tick, the mean and the longest wait."""
    rows = [["policy", "pods", "bindings", "waited", "mean wait, s", "longest wait, s"]]
    for rec in records:
        classes = np.asarray(rec.wait_classes, dtype=object)
        if classes.size != rec.waits.size:   # a record from before per-class waits were kept
            continue
        first = True
        for name in sorted(set(rec.wait_classes)):
            w = rec.waits[classes == name]
            rows.append([rec.policy if first else "", name, f"{w.size:,d}", f"{100.0 * float((w > 0).mean()):.2f}%",
                         f"{float(w.mean()):.0f}", f"{float(w.max()):,.0f}"])
            first = False
    if len(rows) == 1:
        return ""
    if all(not (rec.waits > 0).any() for rec in records):
        return "<h2>Who waited to be bound</h2><p>Nobody: every pod was bound in the tick it arrived in.</p>"
    return "<h2>Who waited to be bound</h2>" + _table_html(rows)


def waiting_html(records: Sequence[RunRecord]) -> str:
    """Why the pods still waiting at the end were not placed: the scheduler's last message, grouped by reason."""
    rows = [["policy", "pods waiting at the end", "reason (scheduler's last fit message)", "pods"]]
    for rec in records:
        reasons = sorted(rec.unschedulable_reasons.items(), key=lambda kv: (-kv[1], kv[0]))
        if not reasons:
            rows.append([rec.policy, str(rec.pending_end), "(no scheduler message yet)" if rec.pending_end else "none", ""])
            continue
        for i, (reason, n) in enumerate(reasons):
            rows.append([rec.policy if i == 0 else "", str(rec.pending_end) if i == 0 else "", reason, str(n)])
    if all(rec.pending_end == 0 for rec in records):
        return "<h2>Pods waiting at the end</h2><p>None: every submitted pod was placed by every policy.</p>"
    return "<h2>Pods waiting at the end</h2>" + _table_html(rows)


def render_html(
    records: Sequence[RunRecord],
    results: Sequence[Measures],
    *,
    title: str,
    workload_notes: Sequence[str],
    settings: Mapping[str, Any],
    sources: Sequence[str] = (),
    seeds_rows: Sequence[Sequence[str]] | None = None,
) -> str:
    """The report of one seed's runs; ``seeds_rows`` (a :func:`sim.measures.seed_table`) adds the measures over
    several seeds above it."""
    comp = comparison(results)
    base = next(iter(comp.values()))["baseline"] if comp else (results[0].policy if results else "")
    comp_rows = [["policy", f"hotspot reduction vs {base}", f"scheduled vs {base}", "evictions per pod"]]
    for name, c in comp.items():
        red = c["hotspot_reduction_percent"]
        comp_rows.append([name, "n/a" if red is None else f"{red:.1f}%", f"{c['scheduled_difference']:+d}",
                          f"{c['eviction_rate_percent']:.2f}%"])
    definitions = "".join(f"<dt>{html.escape(k)}</dt><dd>{html.escape(v)}</dd>" for k, v in DEFINITIONS.items())
    notes = "".join(f"<li>{html.escape(n)}</li>" for n in workload_notes)
    cites = "".join(f"<li>{html.escape(s)}</li>" for s in sources)
    settings_rows = [["setting", "value"], *[[k, str(v)] for k, v in settings.items()]]
    waiting = waits_html(records) + waiting_html(records)
    imgs = [
        ("Per-policy comparison", plot_bars(results)),
        ("Hotspots over time", plot_hotspots(records)),
        ("Node CPU utilisation (nodes × time)", plot_heatmaps(records)),
        ("Cluster utilisation and pending pods", plot_cluster(records)),
    ]
    figures = "".join(
        f'<h2>{html.escape(t)}</h2><img alt="{html.escape(t)}" src="data:image/png;base64,{b64}">' for t, b64 in imgs
    )
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1200px; color: #222; }}
table {{ border-collapse: collapse; margin: 1em 0; font-size: 0.9em; }}
th, td {{ border: 1px solid #ccc; padding: 0.3em 0.7em; text-align: right; }}
th:first-child, td:first-child {{ text-align: left; }}
thead {{ background: #f3f3f3; }}
img {{ max-width: 100%; }}
dt {{ font-weight: 600; margin-top: 0.4em; }}
</style></head><body>
<h1>{html.escape(title)}</h1>
<h2>Against the baseline, {html.escape(base)}</h2>
{_table_html(comp_rows) if len(comp_rows) > 1 else "<p>(a single policy: nothing to compare)</p>"}
{f"<h2>Over the seeds</h2>{_table_html(seeds_rows)}<p>The rest of the report is the first seed's.</p>"
  if seeds_rows else ""}
<h2>Measures</h2>
{_table_html(table(results))}
{waiting}
{figures}
<h2>Definitions</h2><dl>{definitions}</dl>
<h2>Workload</h2><ul>{notes}</ul>
{f"<h2>Sources</h2><ul>{cites}</ul>" if cites else ""}
<h2>Settings</h2>
{_table_html(settings_rows)}
</body></html>
"""
