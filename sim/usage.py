"""True resource usage of simulated pods, vectorised over every pod of the workload.

The model is placement-independent on purpose: a pod's CPU demand at a tick depends only on the workload,
the seed and the time, never on where the pod runs or which policy is being simulated.  Runs of different
policies therefore see exactly the same demand, and differences in the results come from the policy alone.
What a policy *does* change is applied on top by the simulator: when a pod runs (its age drives memory
warm-up) and whether a waterline throttle caps its CPU.

Call :meth:`UsageModel.advance` once per tick, in order, before reading demands for that tick; the per-pod
noise is a smooth AR(1) process driven by one seeded generator, so the sequence is reproducible.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from sim.model import DAY_SECONDS, Workload

__all__ = ["UsageModel", "NOISE_CORRELATION", "MEMORY_WARMUP_SECONDS"]

# Correlation of the noise from one 30 s tick to the next: bursts last a few minutes, as real ones do.
NOISE_CORRELATION = 0.85
MEMORY_WARMUP_SECONDS = 3600.0

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


class UsageModel:
    """Per-pod CPU demand and memory usage for the pods of one workload (indexed by position)."""

    def __init__(self, workload: Workload, *, seed: int, tick_seconds: float, day_offset: float = 0.0) -> None:
        pods = workload.pods
        self.size = len(pods)
        self._cpu_base = np.array([p.usage.cpu_base_milli for p in pods], dtype=np.float64)
        self._amp = np.array([p.usage.cpu_amplitude for p in pods], dtype=np.float64)
        self._peak = np.array([p.usage.cpu_peak for p in pods], dtype=np.float64)
        self._noise = np.array([p.usage.cpu_noise for p in pods], dtype=np.float64)
        self._mem_base = np.array([p.usage.memory_base_bytes for p in pods], dtype=np.float64)
        self._mem_growth = np.array([p.usage.memory_growth for p in pods], dtype=np.float64)
        self._shape = np.array([p.usage.shape_index for p in pods], dtype=np.int64)
        self._shape_offset = np.array([p.usage.shape_offset for p in pods], dtype=np.float64)
        self._cpu_limit = np.array([p.cpu_limit_milli or np.inf for p in pods], dtype=np.float64)
        self._mem_limit = np.array([p.memory_limit_bytes or np.inf for p in pods], dtype=np.float64)
        self._shapes = np.asarray(workload.shapes, dtype=np.float64)
        self._shape_step = float(workload.shape_step)
        # Seconds after midnight at t = 0: diurnal curves and replayed series follow the time of day.
        self._day_offset = float(day_offset)
        # Noise decorrelates per second, so a different tick length keeps the same burst lifetime.
        self._rho = NOISE_CORRELATION ** (tick_seconds / 30.0)
        self._rng = np.random.default_rng([seed, 0x5EED])
        self._z = self._rng.standard_normal(self.size)
        self._t: float | None = None

    def advance(self, t: float) -> None:
        """Move the noise to time ``t`` (one step per call)."""
        if self._t is not None and t < self._t:
            raise ValueError("the usage model cannot go back in time")
        if self._t is not None:
            eps = self._rng.standard_normal(self.size)
            self._z = self._rho * self._z + math.sqrt(1.0 - self._rho**2) * eps
        self._t = t

    def shape_factor(self, idx: IntArray, t: float) -> FloatArray:
        """The relative CPU level (mean 1) of pods ``idx`` at time ``t``: diurnal cosine or replayed series."""
        t = t + self._day_offset
        out = 1.0 + self._amp[idx] * np.cos(2.0 * np.pi * (t / DAY_SECONDS - self._peak[idx]))
        shape = self._shape[idx]
        replayed = shape >= 0
        if replayed.any() and self._shapes.size:
            n_steps = self._shapes.shape[1]
            step = ((t + self._shape_offset[idx][replayed]) // self._shape_step).astype(np.int64) % n_steps
            out[replayed] = self._shapes[shape[replayed], step]
        return np.asarray(out, dtype=np.float64)

    def cpu_demand(self, idx: IntArray, t: float) -> FloatArray:
        """Millicores pods ``idx`` want at ``t`` (never negative, never above their own CPU limit)."""
        level = self._cpu_base[idx] * self.shape_factor(idx, t) * (1.0 + self._noise[idx] * self._z[idx])
        return np.minimum(np.maximum(level, 0.0), self._cpu_limit[idx])

    def memory_usage(self, idx: IntArray, age: FloatArray) -> FloatArray:
        """Bytes pods ``idx`` use after running ``age`` seconds (warm-up growth, capped at their limit)."""
        warm = np.clip(age / MEMORY_WARMUP_SECONDS, 0.0, 1.0)
        return np.minimum(self._mem_base[idx] * (1.0 + self._mem_growth[idx] * warm), self._mem_limit[idx])
