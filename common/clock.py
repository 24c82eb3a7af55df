"""Injectable clocks: the pure core never calls ``time.time()`` itself."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Protocol

__all__ = ["Clock", "SystemClock", "FakeClock", "to_rfc3339", "parse_rfc3339"]


class Clock(Protocol):
    def now(self) -> float:
        """Seconds since the epoch (wall clock)."""

    def monotonic(self) -> float:
        """Seconds on a clock that never goes back."""


class SystemClock:
    def now(self) -> float:
        return time.time()

    def monotonic(self) -> float:
        return time.monotonic()


class FakeClock:
    """A clock that moves only when told to; used by tests and the simulator."""

    def __init__(self, start: float = 1_700_000_000.0) -> None:
        self._t = float(start)

    def now(self) -> float:
        return self._t

    def monotonic(self) -> float:
        return self._t

    def advance(self, seconds: float) -> None:
        if seconds < 0:
            raise ValueError("a clock cannot go back")
        self._t += seconds

    def set(self, t: float) -> None:
        self._t = float(t)


def to_rfc3339(t: float) -> str:
    """Second-precision UTC timestamp, as Kubernetes metav1.Time serialises."""
    return datetime.fromtimestamp(int(t), tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_rfc3339(text: str, *, field: str = "time") -> float:
    """Parse an RFC 3339 timestamp (``Z`` or offset, optional fraction) into epoch seconds."""
    s = text.strip()
    if s.endswith("Z") or s.endswith("z"):
        s = s[:-1] + "+00:00"
    try:
        dt = datetime.fromisoformat(s)
    except ValueError as exc:
        raise ValueError(f"{field}: {text!r} is not an RFC 3339 time") from exc
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return dt.timestamp()
