"""Parsers for the public cluster traces the simulator replays, and for users' own exports in the same formats.

Formats (CSV, UTF-8; a bad value raises :class:`TraceError` naming the file, line and column):

``machine_usage.csv`` — Alibaba cluster-trace-v2018 machine usage, **no header**, one sample per row::

    machine_id, time_stamp, cpu_util_percent, mem_util_percent[, mem_gps, mkpi, net_in, net_out, disk_io_percent]

  ``time_stamp`` is seconds from the trace start (integer or decimal, >= 0, rows of a machine need not be
  sorted); ``cpu_util_percent`` and ``mem_util_percent`` are 0–100.  Only the first four columns are read, so
  an export with just those four is valid.  Sampling may be irregular: :func:`resample` forward-fills a
  series onto a regular grid.

``openb_node_list_all_node.csv`` — Alibaba cluster-trace-gpu-v2023 (OpenB) nodes, **with header**; columns
  ``sn, cpu_milli, memory_mib, gpu, model`` in any order (``gpu`` and ``model`` may be empty).

``openb_pod_list_default.csv`` — OpenB pods, **with header**; columns ``name, cpu_milli, memory_mib, num_gpu,
  gpu_milli, gpu_spec, qos, pod_phase, creation_time, deletion_time, scheduled_time`` in any order.  Required:
  ``name, cpu_milli, memory_mib, creation_time``; ``deletion_time`` empty means "still running at the end";
  ``qos`` is ``LS``, ``Burstable``, ``BE``, ``Guaranteed`` or another label (read as LS).
"""

from __future__ import annotations

import csv
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from common.config import ConfigError

__all__ = [
    "TraceError",
    "MachineSeries",
    "OpenbNode",
    "OpenbPod",
    "read_machine_usage",
    "read_openb_nodes",
    "read_openb_pods",
    "resample",
    "MACHINE_USAGE_FILE",
    "OPENB_NODES_FILE",
    "OPENB_PODS_FILE",
]

MACHINE_USAGE_FILE = "alibaba-v2018/machine_usage.csv"
OPENB_NODES_FILE = "alibaba-openb-2023/openb_node_list_all_node.csv"
OPENB_PODS_FILE = "alibaba-openb-2023/openb_pod_list_default.csv"

FloatArray = npt.NDArray[np.float64]


class TraceError(ConfigError):
    """A trace file that cannot be used; the message starts with ``file: line L, column C (name):``."""

    def __init__(self, message: str, *, path: str | Path, line: int = 0, column: int = 0, name: str = "") -> None:
        where = ""
        if line:
            where = f"line {line}"
            if column:
                where += f", column {column}"
                if name:
                    where += f" ({name})"
        super().__init__(message, field=where, source=str(path))
        self.line = line
        self.column = column


@dataclass(frozen=True, slots=True)
class MachineSeries:
    """One machine's samples, sorted by time: seconds, CPU percent, memory percent."""

    machine: str
    times: FloatArray
    cpu_percent: FloatArray
    mem_percent: FloatArray


@dataclass(frozen=True, slots=True)
class OpenbNode:
    name: str
    cpu_milli: int
    memory_mib: int
    gpu: int
    model: str


@dataclass(frozen=True, slots=True)
class OpenbPod:
    name: str
    cpu_milli: int
    memory_mib: int
    num_gpu: int
    gpu_milli: int
    qos: str
    phase: str
    creation_time: float
    deletion_time: float | None
    scheduled_time: float | None


def _rows(path: Path) -> Iterator[tuple[int, list[str]]]:
    try:
        with path.open(newline="", encoding="utf-8") as fh:
            for i, row in enumerate(csv.reader(fh), start=1):
                if row and any(cell.strip() for cell in row):
                    yield i, row
    except FileNotFoundError:
        raise TraceError("file not found", path=path) from None
    except UnicodeDecodeError:
        raise TraceError("not a UTF-8 text file", path=path) from None
    except csv.Error as exc:
        raise TraceError(f"not valid CSV: {exc}", path=path) from None
    except OSError as exc:
        raise TraceError(f"cannot read: {exc.strerror}", path=path) from None


def _number(
    raw: str, *, path: Path, line: int, column: int, name: str, lo: float | None = None, hi: float | None = None
) -> float:
    text = raw.strip()
    try:
        v = float(text)
    except ValueError:
        raise TraceError(f"expected a number, got {raw!r}", path=path, line=line, column=column, name=name) from None
    if not math.isfinite(v):
        raise TraceError(f"expected a finite number, got {raw!r}", path=path, line=line, column=column, name=name)
    if lo is not None and v < lo or hi is not None and v > hi:
        bounds = f"{lo:g}..{hi:g}" if lo is not None and hi is not None else f">= {lo:g}"
        raise TraceError(f"{text} is out of range ({bounds})", path=path, line=line, column=column, name=name)
    return v


def read_machine_usage(path: str | Path, *, machines: Sequence[str] | None = None) -> list[MachineSeries]:
    """Every machine's CPU and memory series from a v2018 ``machine_usage.csv``, ordered by machine id.

    ``machines`` keeps only those ids.  A machine needs at least two samples to be a series.
    """
    p = Path(path)
    keep = set(machines) if machines is not None else None
    cols = ("machine_id", "time_stamp", "cpu_util_percent", "mem_util_percent")
    data: dict[str, tuple[list[float], list[float], list[float]]] = {}
    for line, row in _rows(p):
        if len(row) < 4:
            raise TraceError(
                f"expected at least 4 columns ({', '.join(cols)}), found {len(row)}", path=p, line=line
            )
        machine = row[0].strip()
        if not machine:
            raise TraceError("empty machine id", path=p, line=line, column=1, name=cols[0])
        if keep is not None and machine not in keep:
            continue
        t = _number(row[1], path=p, line=line, column=2, name=cols[1], lo=0)
        cpu = _number(row[2], path=p, line=line, column=3, name=cols[2], lo=0, hi=100)
        mem = _number(row[3], path=p, line=line, column=4, name=cols[3], lo=0, hi=100)
        ts, cs, ms = data.setdefault(machine, ([], [], []))
        ts.append(t)
        cs.append(cpu)
        ms.append(mem)
    if not data:
        raise TraceError("no usable rows", path=p)
    out = []
    for machine in sorted(data):
        ts, cs, ms = data[machine]
        if len(ts) < 2:
            continue
        times = np.asarray(ts, dtype=np.float64)
        order = np.argsort(times, kind="stable")
        out.append(
            MachineSeries(
                machine,
                times[order],
                np.asarray(cs, dtype=np.float64)[order],
                np.asarray(ms, dtype=np.float64)[order],
            )
        )
    if not out:
        raise TraceError("no machine has at least two samples", path=p)
    return out


def resample(times: FloatArray, values: FloatArray, *, step: float, start: float, end: float) -> FloatArray:
    """Forward-fill samples onto the grid ``start, start+step, ... < end``; before the first sample, back-fill."""
    if step <= 0:
        raise ValueError("step must be positive")
    grid = np.arange(start, end, step, dtype=np.float64)
    idx = np.searchsorted(times, grid, side="right") - 1
    return np.asarray(values[np.clip(idx, 0, len(values) - 1)], dtype=np.float64)


def _header(path: Path, required: Sequence[str], optional: Sequence[str]) -> tuple[dict[str, int], Iterator[tuple[int, list[str]]]]:
    rows = _rows(path)
    try:
        line, header = next(rows)
    except StopIteration:
        raise TraceError("empty file (a header line is required)", path=path) from None
    names = [h.strip().lstrip("\ufeff") for h in header]
    index = {n: i for i, n in enumerate(names)}
    missing = [c for c in required if c not in index]
    if missing:
        raise TraceError(
            f"header lacks column(s) {', '.join(missing)}; found {', '.join(names)}", path=path, line=line
        )
    return {c: index[c] for c in (*required, *optional) if c in index}, rows


@dataclass(frozen=True, slots=True)
class _Row:
    """One data row of a headed CSV, with the position needed to name a bad cell."""

    path: Path
    line: int
    cells: list[str]
    cols: dict[str, int]

    def text(self, name: str) -> str:
        i = self.cols.get(name)
        return self.cells[i].strip() if i is not None and i < len(self.cells) else ""

    def error(self, message: str, name: str) -> TraceError:
        return TraceError(message, path=self.path, line=self.line, column=self.cols[name] + 1, name=name)

    def number(self, name: str, *, lo: float = 0) -> float:
        raw = self.text(name)
        if not raw:
            raise self.error("required value is empty", name)
        return _number(raw, path=self.path, line=self.line, column=self.cols[name] + 1, name=name, lo=lo)

    def optional(self, name: str) -> float | None:
        return self.number(name) if self.text(name) else None


def read_openb_nodes(path: str | Path) -> list[OpenbNode]:
    """OpenB nodes in file order."""
    p = Path(path)
    cols, rows = _header(p, ("sn", "cpu_milli", "memory_mib"), ("gpu", "model"))
    out = []
    seen: set[str] = set()
    for line, cells in rows:
        row = _Row(p, line, cells, cols)
        name = row.text("sn")
        if not name:
            raise row.error("empty node name", "sn")
        if name in seen:
            raise row.error(f"duplicate node {name!r}", "sn")
        seen.add(name)
        out.append(
            OpenbNode(
                name=name,
                cpu_milli=int(row.number("cpu_milli", lo=1)),
                memory_mib=int(row.number("memory_mib", lo=1)),
                gpu=int(row.optional("gpu") or 0),
                model=row.text("model"),
            )
        )
    if not out:
        raise TraceError("no nodes", path=p)
    return out


def read_openb_pods(path: str | Path) -> list[OpenbPod]:
    """OpenB pods in file order."""
    p = Path(path)
    cols, rows = _header(
        p,
        ("name", "cpu_milli", "memory_mib", "creation_time"),
        ("num_gpu", "gpu_milli", "gpu_spec", "qos", "pod_phase", "deletion_time", "scheduled_time"),
    )
    out = []
    for line, cells in rows:
        row = _Row(p, line, cells, cols)
        name = row.text("name")
        if not name:
            raise row.error("empty pod name", "name")
        created = row.number("creation_time")
        deleted = row.optional("deletion_time")
        if deleted is not None and deleted < created:
            raise row.error(f"deletion_time {deleted:g} is before creation_time {created:g}", "deletion_time")
        out.append(
            OpenbPod(
                name=name,
                cpu_milli=int(row.number("cpu_milli")),
                memory_mib=int(row.number("memory_mib")),
                num_gpu=int(row.optional("num_gpu") or 0),
                gpu_milli=int(row.optional("gpu_milli") or 0),
                qos=row.text("qos") or "LS",
                phase=row.text("pod_phase"),
                creation_time=created,
                deletion_time=deleted,
                scheduled_time=row.optional("scheduled_time"),
            )
        )
    if not out:
        raise TraceError("no pods", path=p)
    return out
