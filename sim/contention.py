"""CPU contention on a node, the way the kernel resolves it, and what it costs the pods.

Each step, per node, the pods' CPU *demand* (what the workload model says they want, already capped by their own
limit) meets the node's capacity:

* **throttling** — a CFS quota (a waterline's, below the pod's limit) caps what the pod may take, whatever is free;
* **shares** — when what is left wanted exceeds the cores left after the system's part (kubelet, runtime: served
  first, from its own cgroup), CFS divides the cores by ``cpu.shares``: the kubelet gives a pod
  ``max(2, request_millicores × 1024 / 1000)`` shares, so a pod gets CPU in proportion to its request and a
  best-effort pod (no request: 2 shares) only what the others leave.  A pod wanting less than its share keeps the
  rest for the others (max-min fairness, :func:`fair_share`).

What that costs, by class:

* **finite pods** (batch and best-effort) are work-conserving: a pod runs at speed ``served / demand`` and finishes
  once it has run its planned duration at full speed, so contention and throttling stretch it
  (:func:`advance_work`);
* **services** answer requests: their latency inflation over an idle node is the M/M/1 ratio ``1 / (1 − ρ)`` at
  the node's CPU utilisation ``ρ``, times ``demand / served`` for the demand they are denied, capped at
  :data:`MAX_INFLATION` (:func:`latency_inflation`).  M/M/1 is a pessimistic stand-in for a many-core node (an
  M/M/c queue waits less at the same ρ), applied alike to every policy.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

__all__ = ["MAX_INFLATION", "MIN_SHARES", "cpu_shares", "fair_share", "latency_inflation", "advance_work"]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

# The kubelet's floor for cpu.shares (a BestEffort pod's whole share) and shares per core.
MIN_SHARES = 2.0
SHARES_PER_CORE = 1024.0
# Latency inflation is capped here: at ρ = 0.95 an M/M/1 queue waits 20× its service time; beyond it the queue
# model says nothing useful (the service is simply down).
MAX_INFLATION = 20.0
_EPS = 1e-9


def cpu_shares(request_milli: FloatArray) -> FloatArray:
    """``cpu.shares`` the kubelet sets for pods requesting ``request_milli`` millicores (MilliCPUToShares)."""
    return np.maximum(MIN_SHARES, np.floor(np.asarray(request_milli, dtype=np.float64) * SHARES_PER_CORE / 1000.0))


def fair_share(node: IntArray, wanted: FloatArray, shares: FloatArray, capacity: FloatArray) -> FloatArray:
    """CPU each pod gets: ``wanted`` when its node has room, else max-min fair by ``shares`` (progressive filling).

    ``node`` maps pods to nodes, ``capacity`` is per node (millicores left for pods).  Each round gives every
    unsatisfied pod its share of what its node has left; pods that want less keep what they want and the rest is
    shared again, so a node needs at most as many rounds as it has pods (usually two or three).
    """
    n_nodes = capacity.size
    served = np.zeros_like(wanted)
    left = capacity.astype(np.float64).copy()
    active = wanted > _EPS
    while active.any():
        weight = np.bincount(node[active], weights=shares[active], minlength=n_nodes)
        rate = np.divide(left, weight, out=np.zeros(n_nodes), where=weight > 0)
        give = np.zeros_like(wanted)
        give[active] = np.minimum(wanted[active] - served[active], shares[active] * rate[node[active]])
        served += give
        left -= np.bincount(node, weights=give, minlength=n_nodes)
        satisfied = served >= wanted - _EPS
        starved_nodes = left <= _EPS * np.maximum(capacity, 1.0)
        active &= ~satisfied & ~starved_nodes[node]
    return served


def latency_inflation(node_utilisation: FloatArray, demand: FloatArray, served: FloatArray) -> FloatArray:
    """Per service pod: ``min(MAX_INFLATION, 1 / (1 − ρ) × demand / served)`` (1 on an idle node, fully served)."""
    rho = np.clip(node_utilisation, 0.0, 1.0)
    queueing = 1.0 / np.maximum(1.0 - rho, 1.0 / MAX_INFLATION)
    unmet = np.divide(demand, served, out=np.full_like(demand, MAX_INFLATION), where=served > _EPS)
    unmet = np.where(demand > _EPS, unmet, 1.0)
    return np.minimum(MAX_INFLATION, queueing * np.maximum(unmet, 1.0))


def advance_work(left: FloatArray, demand: FloatArray, served: FloatArray, t: float, step: float) -> tuple[FloatArray, FloatArray]:
    """Run finite pods for one step from ``t``: (full-speed seconds still to run, projected end time).

    A pod runs at speed ``served / demand`` (1 when it wants nothing).  The end is ``t + left / speed``: within
    the step when it lands before ``t + step``, else where the pod would finish at this speed.
    """
    speed = np.divide(served, demand, out=np.ones_like(demand), where=demand > _EPS)
    speed = np.clip(speed, 0.0, 1.0)
    ends = t + np.divide(left, speed, out=np.full_like(left, np.inf), where=speed > 0)
    return np.maximum(left - speed * step, 0.0), ends
