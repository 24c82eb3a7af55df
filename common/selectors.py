"""Label and field selectors, in the two forms Kubernetes uses (objects and query strings)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["LabelSelector", "parse_selector_string", "match_field_selector", "SelectorError"]


class SelectorError(ValueError):
    pass


@dataclass(frozen=True, slots=True)
class _Requirement:
    key: str
    operator: str  # In | NotIn | Exists | DoesNotExist
    values: tuple[str, ...]

    def matches(self, labels: Mapping[str, str]) -> bool:
        if self.operator == "In":
            return self.key in labels and labels[self.key] in self.values
        if self.operator == "NotIn":
            return self.key not in labels or labels[self.key] not in self.values
        if self.operator == "Exists":
            return self.key in labels
        if self.operator == "DoesNotExist":
            return self.key not in labels
        raise SelectorError(f"unknown operator {self.operator!r}")


@dataclass(frozen=True, slots=True)
class LabelSelector:
    """A parsed ``metav1.LabelSelector``.  ``None`` (absent) and ``{}`` both match everything."""

    requirements: tuple[_Requirement, ...] = ()

    @classmethod
    def parse(cls, raw: Mapping[str, Any] | None, *, field: str = "selector") -> LabelSelector:
        if raw is None:
            return cls()
        if not isinstance(raw, Mapping):
            raise SelectorError(f"{field}: expected an object with matchLabels/matchExpressions")
        reqs: list[_Requirement] = []
        ml = raw.get("matchLabels") or {}
        if not isinstance(ml, Mapping):
            raise SelectorError(f"{field}.matchLabels: expected a map")
        for k, v in ml.items():
            reqs.append(_Requirement(str(k), "In", (str(v),)))
        exprs = raw.get("matchExpressions") or []
        if not isinstance(exprs, list):
            raise SelectorError(f"{field}.matchExpressions: expected a list")
        for i, e in enumerate(exprs):
            where = f"{field}.matchExpressions[{i}]"
            if not isinstance(e, Mapping) or not e.get("key"):
                raise SelectorError(f"{where}.key: required")
            op = e.get("operator")
            values = tuple(str(v) for v in (e.get("values") or []))
            if op in ("In", "NotIn"):
                if not values:
                    raise SelectorError(f"{where}.values: must be non-empty for operator {op}")
            elif op in ("Exists", "DoesNotExist"):
                if values:
                    raise SelectorError(f"{where}.values: must be empty for operator {op}")
            else:
                raise SelectorError(f"{where}.operator: {op!r} is not one of In, NotIn, Exists, DoesNotExist")
            reqs.append(_Requirement(str(e["key"]), str(op), values))
        return cls(tuple(reqs))

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        labels = labels or {}
        return all(r.matches(labels) for r in self.requirements)

    @property
    def empty(self) -> bool:
        return not self.requirements


_SET = re.compile(r"^\s*([^\s!=]+)\s+(in|notin)\s+\(([^)]*)\)\s*$")


def parse_selector_string(text: str | None) -> LabelSelector:
    """``"a=b,c!=d,e,!f,g in (x,y)"`` as ``kubectl -l`` takes it."""
    if not text:
        return LabelSelector()
    reqs: list[_Requirement] = []
    # split on commas that are not inside parentheses
    parts, depth, cur = [], 0, ""
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    for part in parts:
        p = part.strip()
        if not p:
            continue
        m = _SET.match(p)
        if m:
            values = tuple(v.strip() for v in m.group(3).split(",") if v.strip())
            reqs.append(_Requirement(m.group(1), "In" if m.group(2) == "in" else "NotIn", values))
        elif "!=" in p:
            k, v = p.split("!=", 1)
            reqs.append(_Requirement(k.strip(), "NotIn", (v.strip(),)))
        elif "==" in p or "=" in p:
            k, v = p.split("==", 1) if "==" in p else p.split("=", 1)
            reqs.append(_Requirement(k.strip(), "In", (v.strip(),)))
        elif p.startswith("!"):
            reqs.append(_Requirement(p[1:].strip(), "DoesNotExist", ()))
        else:
            reqs.append(_Requirement(p, "Exists", ()))
    return LabelSelector(tuple(reqs))


def _lookup(obj: Mapping[str, Any], path: str) -> str:
    cur: Any = obj
    for part in path.split("."):
        if not isinstance(cur, Mapping):
            return ""
        cur = cur.get(part)
    return "" if cur is None else str(cur)


def match_field_selector(obj: Mapping[str, Any], selector: str | None) -> bool:
    """Field selectors of the ``a.b=c,d!=e`` form (``spec.nodeName=n1``, ``metadata.name=x``)."""
    if not selector:
        return True
    for part in selector.split(","):
        p = part.strip()
        if not p:
            continue
        if "!=" in p:
            k, v = p.split("!=", 1)
            if _lookup(obj, k.strip()) == v.strip():
                return False
        else:
            k, v = p.split("==", 1) if "==" in p else p.split("=", 1)
            if _lookup(obj, k.strip()) != v.strip():
                return False
    return True
