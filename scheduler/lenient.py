"""The lenient reader for Volcano-style plugin arguments.

Volcano's plugins read their ``arguments`` map leniently: a value of the wrong type keeps the default (Volcano
logs it and goes on), because a conf is hand-written YAML and a typo must not stop the scheduler.  Loadwise reads
every Volcano-style argument through these three functions so that the same value means the same thing in every
plugin (docs/design/scheduler.md §1.4):

* an integer is a YAML integer; a string ``"3"``, a float or a boolean keeps the default;
* a float is any finite YAML number (an integer counts); ``.inf``, ``.nan``, strings and booleans keep the default;
* a boolean is a YAML boolean or one of the strings ``true``/``false``/``t``/``f``/``1``/``0`` (any case).

Arguments that Koordinator or kube-scheduler validate (``loadaware``, ``noderesources``) are validated strictly
instead, and refused with the key named.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

__all__ = ["int_arg", "float_arg", "bool_arg"]

_TRUE = ("true", "t", "1")
_BOOL_STRINGS = (*_TRUE, "false", "f", "0")


def int_arg(raw: Mapping[str, Any], key: str, default: int) -> int:
    value = raw.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def float_arg(raw: Mapping[str, Any], key: str, default: float) -> float:
    value = raw.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return default
    return float(value)


def bool_arg(raw: Mapping[str, Any], key: str, default: bool) -> bool:
    value = raw.get(key)
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in _BOOL_STRINGS:
        return value.strip().lower() in _TRUE
    return default
