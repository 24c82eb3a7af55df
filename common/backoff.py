"""Exponential backoff: how long to wait after the n-th failure in a row.

One rule for every retry loop (the informers' relist and watch, the binder's pods/binding calls, the agent's
NodeMetric reports): the first wait is ``initial``, each further failure doubles it, ``maximum`` caps it, and
an optional ``jitter`` spreads replicas that failed together.  The caller keeps the failure count and does the
waiting, on the wall clock or an injected one; this module only does the arithmetic.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

__all__ = ["Backoff"]

_MAX_DOUBLINGS = 62  # 2**62 times any sensible initial delay is past every cap; keeps the power finite


@dataclass(frozen=True, slots=True)
class Backoff:
    initial: float
    maximum: float
    jitter: float = 0.0  # fraction: 0.2 spreads each wait uniformly over ±20 %

    def __post_init__(self) -> None:
        if not 0 < self.initial <= self.maximum:
            raise ValueError(f"backoff: need 0 < initial ({self.initial}) <= maximum ({self.maximum})")
        if not 0 <= self.jitter < 1:
            raise ValueError(f"backoff: jitter must be in [0, 1), got {self.jitter}")

    def delay(self, failures: int, rng: random.Random | None = None) -> float:
        """The wait after ``failures`` failures in a row (1 = the first); jittered when ``rng`` is given."""
        if failures < 1:
            raise ValueError(f"backoff: failures must be >= 1, got {failures}")
        wait = min(self.maximum, self.initial * 2.0 ** min(failures - 1, _MAX_DOUBLINGS))
        if self.jitter and rng is not None:
            wait *= rng.uniform(1 - self.jitter, 1 + self.jitter)
        return wait
