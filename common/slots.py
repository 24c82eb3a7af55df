"""Making a slotted dataclass's objects slot by slot, for the objects made once or twice per pod.

A frozen dataclass's ``__init__`` sets every field through ``object.__setattr__``, and an object that notes its
changes (the scheduler's tasks and jobs) through its hook, a Python call per field: for a pod's view, its task
and group of one, its template and a bind's event that is most of what making them costs.  :func:`slot_filler`
compiles, once per class, a function that takes an object and the values of its fields (in their order, or by
name) and sets each slot, as :mod:`dataclasses` compiles ``__init__`` itself; :func:`slot_maker` one that makes
the object too.

Setting a slot through its descriptor is still a Python call per field.  A class whose only base is ``object``
gets a twin: a plain class with the same slots (so the same layout), whose slots an ordinary attribute store
sets (one bytecode, no call); the object is made or filled as the twin and turned into the class by assigning
``__class__``, which Python allows between classes of the same slots.  That costs about a third of the calls.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import fields, is_dataclass
from typing import Any

__all__ = ["slot_filler", "slot_maker"]

# the names the compiled functions use besides the fields: a field of one of these names would hide it
_RESERVED = frozenset({"filled_object", "_cls", "_twin", "_new", "_set_class", "_fill", "_type"})


def _twin(cls: type) -> type | None:
    """A plain class with ``cls``'s slots that its objects may be turned into and back (``__class__``), or None
    when ``cls`` has a base other than ``object`` (whose ``__setattr__`` the twin would inherit)."""
    if cls.__bases__ != (object,):
        return None
    twin = type(f"_{cls.__name__}Twin", (object,), {"__slots__": cls.__dict__["__slots__"]})
    try:
        probe: Any = object.__new__(twin)
        probe.__class__ = cls
    except TypeError:
        return None
    return twin


def _fields_of(cls: type, role: str) -> list[str]:
    if not is_dataclass(cls) or "__slots__" not in cls.__dict__:
        raise TypeError(f"{role}: {cls.__name__} is not a slotted dataclass")
    names = [f.name for f in fields(cls)]
    clash = (_RESERVED | {f"set_{i}" for i in range(len(names))}) & set(names)
    if clash:
        raise TypeError(f"{role}: {cls.__name__} has fields named {sorted(clash)}")
    return names


def _compiled(source: str, scope: dict[str, Any], name: str, qualname: str) -> Callable[..., Any]:
    exec(source, scope)   # noqa: S102
    made: Callable[..., Any] = scope[name]
    made.__qualname__ = qualname
    return made


def slot_filler(cls: type) -> Callable[..., Any]:
    """``fill(obj, *values, **values)``: sets every field of ``obj`` (an instance of ``cls``, a slotted dataclass,
    made with ``object.__new__`` or one to remake in place) without ``__setattr__``, and returns ``obj``.  Every
    field must be given; defaults are not applied."""
    names = _fields_of(cls, "slot_filler")
    twin = _twin(cls)
    scope: dict[str, Any] = {f"set_{i}": getattr(cls, name).__set__ for i, name in enumerate(names)}
    scope.update(_cls=cls, _twin=twin, _set_class=object.__setattr__, _type=type)
    params = "".join(f", {name}" for name in names)
    by_descriptor = "".join(f"    set_{i}(filled_object, {name})\n" for i, name in enumerate(names))
    if twin is None:
        body = by_descriptor
    else:
        # an object of exactly ``cls`` is filled as the twin; one of a subclass (another layout) slot by slot
        stores = "".join(f"        filled_object.{name} = {name}\n" for name in names)
        body = (f"    if _type(filled_object) is _cls:\n        _set_class(filled_object, '__class__', _twin)\n"
                f"{stores}        filled_object.__class__ = _cls\n        return filled_object\n{by_descriptor}")
    return _compiled(f"def fill(filled_object{params}):\n{body}    return filled_object\n", scope, "fill",
                     f"slot_filler({cls.__qualname__})")


def slot_maker(cls: type) -> Callable[..., Any]:
    """``make(*values, **values)``: a new object of ``cls`` (a slotted dataclass) with every field set to the value
    given, made without ``__init__`` or ``__setattr__`` (``slot_filler(cls)(object.__new__(cls), ...)``, made as
    ``cls``'s twin when it has one).  Every field must be given; defaults are not applied."""
    names = _fields_of(cls, "slot_maker")
    twin = _twin(cls)
    params = ", ".join(names)
    if twin is None:
        fill = slot_filler(cls)
        scope: dict[str, Any] = {"_fill": fill, "_cls": cls, "_new": object.__new__}
        body = f"    return _fill(_new(_cls), {params})\n"
    else:
        scope = {"_cls": cls, "_twin": twin, "_new": object.__new__}
        stores = "".join(f"    filled_object.{name} = {name}\n" for name in names)
        body = f"    filled_object = _new(_twin)\n{stores}    filled_object.__class__ = _cls\n    return filled_object\n"
    return _compiled(f"def make({params}):\n{body}", scope, "make", f"slot_maker({cls.__qualname__})")
