"""Go-style durations (``"5m"``, ``"5m0s"``, ``"1h30m"``, ``"300ms"``) to seconds and back."""

from __future__ import annotations

import re

__all__ = ["parse_duration", "format_duration"]

_UNIT = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_PART = re.compile(r"([0-9]*\.?[0-9]+)(ns|us|µs|ms|s|m|h)")


def parse_duration(text: str | int | float, *, field: str = "duration") -> float:
    """Seconds in a Go duration string; bare numbers are seconds."""
    if isinstance(text, bool):
        raise ValueError(f"{field}: {text!r} is not a duration")
    if isinstance(text, (int, float)):
        return float(text)
    s = str(text).strip()
    if s in ("0", ""):
        if s == "":
            raise ValueError(f"{field}: empty duration")
        return 0.0
    sign = -1.0 if s.startswith("-") else 1.0
    body = s.lstrip("+-")
    pos = 0
    total = 0.0
    for m in _PART.finditer(body):
        if m.start() != pos:
            break
        total += float(m.group(1)) * _UNIT[m.group(2)]
        pos = m.end()
    if pos != len(body) or pos == 0:
        raise ValueError(f"{field}: {text!r} is not a duration (expected e.g. 5m, 300s, 1h30m)")
    return sign * total


def format_duration(seconds: float) -> str:
    """Go's ``Duration.String()`` for whole seconds: ``5m0s``, ``1h0m0s``, ``30s``."""
    total = int(round(seconds))
    if total == 0:
        return "0s"
    h, rem = divmod(total, 3600)
    m, s = divmod(rem, 60)
    if h:
        return f"{h}h{m}m{s}s"
    if m:
        return f"{m}m{s}s"
    return f"{s}s"
