"""Pressure stall information (PSI): how much of the time tasks waited for CPU, memory or I/O.

The kernel measures interference directly: ``/proc/pressure/{cpu,memory,io}`` for the node and, on
cgroup v2, ``{cpu,memory,io}.pressure`` in every cgroup.  Each file has a ``some`` line (at least one
task stalled) and, except for a node's cpu on kernels before 5.13, a ``full`` line (all non-idle
tasks stalled at once)::

    some avg10=1.53 avg60=0.87 avg300=0.42 total=25712345
    full avg10=0.00 avg60=0.00 avg300=0.00 total=0

``avg*`` are percent of wall time over 10 s, 60 s and 300 s; ``total`` is the cumulative stall time in
microseconds, whose rate between two readings is the stalled fraction over exactly that interval.
Parsing is pure; :class:`NodePressureSource` reads the node's files (kept open).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from agent.collect.files import OpenFiles
from agent.collect.procfs import CounterRate

__all__ = [
    "RESOURCES",
    "KINDS",
    "PsiLine",
    "Pressure",
    "parse_pressure",
    "NodePressureSource",
    "PressureRates",
    "nodemetric_pressure",
]

RESOURCES = ("cpu", "memory", "io")
KINDS = ("some", "full")


@dataclass(frozen=True, slots=True)
class PsiLine:
    """One line of a pressure file: the kernel's running averages (percent) and the total (µs)."""

    avg10: float
    avg60: float
    avg300: float
    total_us: int


@dataclass(frozen=True, slots=True)
class Pressure:
    """One resource's pressure; ``full`` is ``None`` where the kernel has no such line."""

    some: PsiLine
    full: PsiLine | None = None

    def line(self, kind: str) -> PsiLine | None:
        return self.some if kind == "some" else self.full


def parse_pressure(data: bytes, source: str = "pressure") -> Pressure:
    """A pressure file; a missing ``some`` line or a malformed field raises ``ValueError`` naming ``source``."""
    lines: dict[bytes, PsiLine] = {}
    for raw in data.splitlines():
        kind, _, rest = raw.partition(b" ")
        fields = dict(f.split(b"=", 1) for f in rest.split() if b"=" in f)
        try:
            lines[kind] = PsiLine(float(fields[b"avg10"]), float(fields[b"avg60"]), float(fields[b"avg300"]),
                                  int(fields[b"total"]))
        except (KeyError, ValueError) as exc:
            raise ValueError(f"{source}: malformed {kind.decode(errors='replace')!r} line: {exc}") from None
    if b"some" not in lines:
        raise ValueError(f"{source}: no 'some' line")
    return Pressure(lines[b"some"], lines.get(b"full"))


class PressureRates:
    """The stalled fraction (0-1) of each resource and kind between consecutive readings of ``total``."""

    def __init__(self) -> None:
        self._rates: dict[tuple[str, str], CounterRate] = {}

    def update(self, t: float, pressure: Mapping[str, Pressure]) -> dict[tuple[str, str], float]:
        out: dict[tuple[str, str], float] = {}
        for resource, p in pressure.items():
            for kind in KINDS:
                line = p.line(kind)
                if line is None:
                    continue
                rate = self._rates.setdefault((resource, kind), CounterRate()).update(t, float(line.total_us))
                if rate is not None:
                    out[(resource, kind)] = rate / 1e6
        return out


class NodePressureSource:
    """The node's ``<proc_root>/pressure/{cpu,memory,io}``; ``available()`` is false on kernels without PSI."""

    def __init__(self, proc_root: str = "/proc") -> None:
        self.dir = os.path.join(proc_root, "pressure")
        self._files = OpenFiles()
        self._rates = PressureRates()

    def available(self) -> bool:
        return os.access(os.path.join(self.dir, "cpu"), os.R_OK)

    def read(self) -> dict[str, Pressure]:
        """Every resource's pressure now; a resource whose file is missing is left out."""
        out: dict[str, Pressure] = {}
        for resource in RESOURCES:
            path = os.path.join(self.dir, resource)
            try:
                data = self._files.read(path)
            except FileNotFoundError:
                continue
            out[resource] = parse_pressure(data, path)
        return out

    def rates(self, t: float, pressure: Mapping[str, Pressure]) -> dict[tuple[str, str], float]:
        """Stalled fraction per (resource, kind) since the previous call (``t`` monotonic seconds)."""
        return self._rates.update(t, pressure)


def nodemetric_pressure(pressure: Mapping[str, Pressure]) -> dict[str, dict[str, dict[str, float]]]:
    """The NodeMetric's ``status.nodeMetric.extensions.pressure``: per resource and kind the kernel's
    averages (percent of time stalled) and the cumulative stall time in seconds."""
    out: dict[str, dict[str, dict[str, float]]] = {}
    for resource, p in sorted(pressure.items()):
        kinds: dict[str, dict[str, float]] = {}
        for kind in KINDS:
            line = p.line(kind)
            if line is not None:
                kinds[kind] = {"avg10": line.avg10, "avg60": line.avg60, "avg300": line.avg300,
                               "totalSeconds": line.total_us / 1e6}
        out[resource] = kinds
    return out
