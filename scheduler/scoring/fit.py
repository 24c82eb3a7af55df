"""NodeResourcesFit filter (docs/design/kube-scoring.md §6), vectorised: which nodes fit a pod's real requests, with
kube's reason strings in kube's order and the resolvable/unresolvable distinction."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from common.resources import CPU, EPHEMERAL_STORAGE, MEMORY, PODS, is_scalar_resource

__all__ = ["TOO_MANY_PODS", "FitResult", "fit_filter", "fit_reasons_ref", "is_extended_resource", "is_ignored"]

TOO_MANY_PODS = "Too many pods"
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]


def is_extended_resource(name: str) -> bool:
    """A domain-qualified name outside ``kubernetes.io`` (hugepages-* and attachable volumes are not)."""
    if "/" not in name:
        return False
    domain = name.split("/", 1)[0]
    return not (domain == "kubernetes.io" or domain.endswith(".kubernetes.io"))


def is_ignored(name: str, ignored: Collection[str], groups: Collection[str]) -> bool:
    """kube's Fit: only an extended resource can be ignored, by its name or by its domain (the group)."""
    return is_extended_resource(name) and (name in ignored or name.split("/", 1)[0] in groups)


@dataclass(frozen=True, slots=True)
class FitResult:
    mask: BoolArray  # True = fits
    unresolvable: BoolArray  # some request exceeds allocatable on its own: preemption cannot help
    too_many_pods: BoolArray
    insufficient: BoolArray  # [n, len(checked)]
    checked: tuple[str, ...]  # resources checked, in reason order

    def reasons(self, i: int) -> list[str]:
        out = [TOO_MANY_PODS] if self.too_many_pods[i] else []
        out.extend(f"Insufficient {r}" for r, bad in zip(self.checked, self.insufficient[i].tolist(), strict=True)
                   if bad)
        return out

    def reason_map(self) -> dict[int, list[str]]:
        return {int(i): self.reasons(int(i)) for i in np.flatnonzero(~self.mask)}


def _order(names: Sequence[str]) -> list[str]:
    fixed = [r for r in (CPU, MEMORY, EPHEMERAL_STORAGE) if r in names]
    return fixed + sorted(r for r in names if is_scalar_resource(r))


def fit_filter(
    pod_request: Mapping[str, int],
    columns: Sequence[str],
    allocatable: IntArray,
    requested: IntArray,
    pod_count: IntArray,
    *,
    ignored_resources: Collection[str] = (),
    ignored_groups: Collection[str] = (),
) -> FitResult:
    """``allocatable``/``requested`` are ``[n, len(columns)]``; a resource the node lacks counts as allocatable 0."""
    n = allocatable.shape[0]
    col = {c: j for j, c in enumerate(columns)}
    pods_alloc = allocatable[:, col[PODS]] if PODS in col else np.zeros(n, dtype=np.int64)
    too_many = pod_count + 1 > pods_alloc
    wanted = [r for r, v in pod_request.items() if v > 0 and r != PODS and not is_ignored(r, ignored_resources,
                                                                                        ignored_groups)]
    checked = tuple(_order(wanted))
    insufficient = np.zeros((n, len(checked)), dtype=np.bool_)
    unresolvable = np.zeros(n, dtype=np.bool_)
    for j, r in enumerate(checked):
        req = pod_request[r]
        alloc = allocatable[:, col[r]] if r in col else np.zeros(n, dtype=np.int64)
        used = requested[:, col[r]] if r in col else np.zeros(n, dtype=np.int64)
        insufficient[:, j] = req > alloc - used
        unresolvable |= req > alloc
    mask = ~too_many & ~insufficient.any(axis=1)
    return FitResult(mask, unresolvable & ~mask, too_many, insufficient, checked)


def fit_reasons_ref(pod_request: Mapping[str, int], allocatable: Mapping[str, int], requested: Mapping[str, int],
                    pod_count: int) -> tuple[list[str], bool]:
    """Scalar reference: (reasons, unresolvable) for one node."""
    reasons: list[str] = []
    if pod_count + 1 > allocatable.get(PODS, 0):
        reasons.append(TOO_MANY_PODS)
    wanted = [r for r, v in pod_request.items() if v > 0 and r != PODS]
    if not wanted:
        return reasons, False
    unresolvable = False
    for r in _order(wanted):
        req = pod_request[r]
        if req > allocatable.get(r, 0) - requested.get(r, 0):
            reasons.append(f"Insufficient {r}")
            unresolvable |= req > allocatable.get(r, 0)
    return reasons, unresolvable
