"""Volcano's resource comparisons on ``Resources`` vectors (docs/design/scheduler.md §2.2).

``Resources`` drops zero entries, so "missing" and "zero" coincide; where Volcano distinguishes a
missing dimension as *Zero* or *Infinity* the caller says which through ``missing_unlimited``.
Quantities are integers (millicores, bytes, units), so Volcano's 0.1 milli-unit tolerance reduces to
exact comparison.  A *bound* is a vector whose absent dimensions mean "no limit".
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from common.resources import PODS, Resources

__all__ = [
    "exceeded_part",
    "min_dimension",
    "less_equal",
    "exceeding_requested",
    "share",
    "dominant_share",
    "is_empty",
    "sum_resources",
]


def sum_resources(vectors: Iterable[Mapping[str, int]]) -> Resources:
    """Component-wise sum of any number of vectors."""
    total: dict[str, int] = {}
    for vec in vectors:
        for name, amount in vec.items():
            total[name] = total.get(name, 0) + amount
    return Resources(total)


def exceeded_part(left: Mapping[str, int], right: Mapping[str, int]) -> Resources:
    """Positive part of ``left - right`` per dimension (Volcano's ``ExceededPart``)."""
    return Resources({name: amount - right.get(name, 0) for name, amount in left.items() if amount > right.get(name, 0)})


def min_dimension(left: Mapping[str, int], right: Mapping[str, int], *, missing_unlimited: bool) -> Resources:
    """Per-dimension minimum over ``left``'s dimensions (``MinDimensionResource``).

    A dimension of ``left`` absent from ``right`` stays unchanged when ``missing_unlimited`` (Infinity)
    and becomes 0 otherwise (Zero).
    """
    out: dict[str, int] = {}
    for name, amount in left.items():
        if name in right:
            out[name] = min(amount, right[name])
        elif missing_unlimited:
            out[name] = amount
    return Resources(out)


def less_equal(left: Mapping[str, int], right: Mapping[str, int], *, missing_unlimited: bool = False) -> bool:
    """``left <= right`` on every dimension of ``left`` (``LessEqual``).

    With ``missing_unlimited`` a dimension absent from ``right`` is skipped instead of compared to 0.
    """
    for name, amount in left.items():
        if name not in right:
            if missing_unlimited:
                continue
            if amount > 0:
                return False
        elif amount > right[name]:
            return False
    return True


def exceeding_requested(
    left: Mapping[str, int], right: Mapping[str, int], requested: Mapping[str, int]
) -> list[str]:
    """Dimensions where ``left > right``, looking only at dimensions ``requested`` asks for.

    Volcano's ``LessEqualWithDimensionAndResourcesName``: ``pods`` is always ignored, a dimension
    missing from ``right`` counts as 0.  An empty result means the check passes.
    """
    return sorted(
        name
        for name, amount in requested.items()
        if amount > 0 and name != PODS and left.get(name, 0) > right.get(name, 0)
    )


def share(left: float, right: float) -> float:
    """``left / right``; 0 when both are 0, 1 when only ``right`` is 0 (Volcano's ``Share``)."""
    if right == 0:
        return 0.0 if left == 0 else 1.0
    return left / right


def dominant_share(allocated: Mapping[str, int], total: Mapping[str, int]) -> tuple[float, str]:
    """Largest ``allocated_r / total_r`` over the total's positive dimensions, and that dimension.

    Ties keep the first dimension in sorted name order, so the answer is deterministic.
    """
    best = 0.0
    best_name = ""
    for name, amount in sorted(total.items()):   # names are unique: sorted by name
        if amount <= 0:
            continue
        value = allocated.get(name, 0) / amount   # share() of a positive total; every drf and proportion step
        if value > best or not best_name:
            best, best_name = value, name
    return best, best_name


def is_empty(vec: Mapping[str, int]) -> bool:
    """cpu, memory and every scalar except ``pods`` are non-positive (``IsEmpty``)."""
    return all(amount <= 0 for name, amount in vec.items() if name != PODS)

