"""Filling a slotted dataclass's fields slot by slot, for the objects made once or twice per pod.

A frozen dataclass's ``__init__`` sets every field through ``object.__setattr__``, and an object that notes its
changes (the scheduler's tasks and jobs) through its hook, a Python call per field: for a pod's view, its task
and group of one, its template and a bind's event that is most of what making them costs.  :func:`slot_filler`
compiles, once per class, a function that takes an object and the values of its fields (in their order, or by
name) and sets each slot through its descriptor, as :mod:`dataclasses` compiles ``__init__`` itself.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import fields, is_dataclass
from typing import Any

__all__ = ["slot_filler"]


def slot_filler(cls: type) -> Callable[..., Any]:
    """``fill(obj, *values, **values)``: sets every field of ``obj`` (an instance of ``cls``, a slotted dataclass,
    made with ``object.__new__`` or one to remake in place) without ``__setattr__``, and returns ``obj``.  Every
    field must be given; defaults are not applied."""
    if not is_dataclass(cls) or "__slots__" not in cls.__dict__:
        raise TypeError(f"slot_filler: {cls.__name__} is not a slotted dataclass")
    names = [f.name for f in fields(cls)]
    scope: dict[str, Any] = {f"set_{i}": getattr(cls, name).__set__ for i, name in enumerate(names)}
    clash = {"filled_object", *scope} & set(names)   # a parameter would hide the object or a setter
    if clash:
        raise TypeError(f"slot_filler: {cls.__name__} has fields named {sorted(clash)}")
    params = "".join(f", {name}" for name in names)
    body = "".join(f"    set_{i}(filled_object, {name})\n" for i, name in enumerate(names))
    exec(f"def fill(filled_object{params}):\n{body}    return filled_object\n", scope)   # noqa: S102
    fill: Callable[..., Any] = scope["fill"]
    fill.__qualname__ = f"slot_filler({cls.__qualname__})"
    return fill
