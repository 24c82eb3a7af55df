"""Small helpers for tests that spoil one field of a document at a time."""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

__all__ = ["replaced"]


def replaced(doc: Any, path: Sequence[Any], value: Any) -> Any:
    """A deep copy of ``doc`` with the value at ``path`` (keys and list indexes) replaced by ``value``."""
    out = copy.deepcopy(doc)
    at: Any = out
    for p in path[:-1]:
        at = at[p]
    at[path[-1]] = value
    return out
