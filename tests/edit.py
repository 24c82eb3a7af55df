"""Small helpers for tests that spoil one field of a document at a time."""

from __future__ import annotations

import copy
from collections.abc import Iterator, Sequence
from typing import Any

__all__ = ["replaced", "walk"]


def replaced(doc: Any, path: Sequence[Any], value: Any) -> Any:
    """A deep copy of ``doc`` with the value at ``path`` (keys and list indexes) replaced by ``value``."""
    out = copy.deepcopy(doc)
    at: Any = out
    for p in path[:-1]:
        at = at[p]
    at[path[-1]] = value
    return out


def walk(doc: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], Any]]:
    """Every ``(path, value)`` below ``doc`` (keys and list indexes), parents before their children."""
    if isinstance(doc, dict):
        items: Any = doc.items()
    elif isinstance(doc, list):
        items = enumerate(doc)
    else:
        return
    for k, v in items:
        yield (*path, k), v
        yield from walk(v, (*path, k))
