"""``slot_filler``: an object filled slot by slot is what the dataclass's constructor makes."""

from __future__ import annotations

import pickle
from dataclasses import FrozenInstanceError, dataclass, field, fields
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from common.cluster import EventRecord
from common.objects import PodView
from common.slots import slot_filler, slot_maker
from scheduler.framework.api import JobInfo, TaskInfo
from scheduler.framework.template import TaskTemplate
from scheduler.plugins.podindex import Placed


@dataclass(frozen=True, slots=True)
class _Frozen:
    a: int
    b: str
    c: tuple[int, ...] = ()
    d: dict[str, int] = field(default_factory=dict)


@given(st.integers(), st.text(max_size=4), st.lists(st.integers(), max_size=3).map(tuple),
       st.dictionaries(st.text(max_size=2), st.integers(), max_size=2))
def test_a_filled_object_is_what_the_constructor_makes(a: int, b: str, c: tuple[int, ...],
                                                       d: dict[str, int]) -> None:
    """By position or by name, every field is set to the very value given, on the object handed over."""
    fill = slot_filler(_Frozen)
    direct = _Frozen(a, b, c, d)
    for made in (fill(object.__new__(_Frozen), a, b, c, d), fill(object.__new__(_Frozen), d=d, c=c, b=b, a=a)):
        assert type(made) is _Frozen and made == direct
        assert all(getattr(made, f.name) is getattr(direct, f.name) for f in fields(_Frozen))
    with pytest.raises(TypeError):
        fill(object.__new__(_Frozen), a, b)   # every field must be given


@given(st.integers(), st.text(max_size=4), st.lists(st.integers(), max_size=3).map(tuple),
       st.dictionaries(st.text(max_size=2), st.integers(), max_size=2))
def test_a_made_object_is_what_the_constructor_makes(a: int, b: str, c: tuple[int, ...], d: dict[str, int]) -> None:
    """``slot_maker`` (made as the class's twin, then turned into the class) gives the constructor's object: the
    same type, values and pickle, and as frozen."""
    make = slot_maker(_Frozen)
    direct = _Frozen(a, b, c, d)
    for made in (make(a, b, c, d), make(d=d, c=c, b=b, a=a)):
        assert type(made) is _Frozen and made == direct
        assert all(getattr(made, f.name) is getattr(direct, f.name) for f in fields(_Frozen))
        assert pickle.loads(pickle.dumps(made)) == direct
        with pytest.raises(FrozenInstanceError):
            made.a = 0   # type: ignore[misc]


_PER_POD = [PodView, EventRecord, TaskInfo, JobInfo, TaskTemplate, Placed]


@pytest.mark.parametrize("cls", _PER_POD)
def test_the_per_pod_classes_are_filled_field_by_field(cls: type) -> None:
    """Each class filled or made per pod: every field, set by name, reads back as the value given, on an object
    of the class itself (or of a subclass of another layout, which is filled slot by slot)."""
    names = [f.name for f in fields(cls)]
    values: dict[str, Any] = {name: object() for name in names}
    targets = [cls, *(sub for sub in cls.__subclasses__() if not sub.__subclasses__())]
    for target in targets:
        made = slot_filler(cls)(object.__new__(target), **values)
        assert type(made) is target and all(getattr(made, name) is values[name] for name in names)
    made = slot_maker(cls)(**values)
    assert type(made) is cls and all(getattr(made, name) is values[name] for name in names)


def test_a_class_with_a_base_is_filled_through_its_descriptors() -> None:
    """A class whose base is not ``object`` gets no twin (it would inherit the base's ``__setattr__``): filled and
    made slot by slot all the same, the base's hook not called."""
    calls: list[str] = []

    class Hooked:
        __slots__ = ()

        def __setattr__(self, name: str, value: Any) -> None:
            calls.append(name)
            object.__setattr__(self, name, value)

    @dataclass(slots=True)
    class Derived(Hooked):
        a: int
        b: int

    made = slot_maker(Derived)(1, 2)
    filled = slot_filler(Derived)(object.__new__(Derived), 3, b=4)
    assert (type(made), made.a, made.b, filled.a, filled.b) == (Derived, 1, 2, 3, 4) and calls == []


def test_only_slotted_dataclasses_without_clashing_names_are_filled() -> None:
    @dataclass
    class Plain:
        a: int

    @dataclass(slots=True)
    class Clash:
        set_0: int
        filled_object: int

    with pytest.raises(TypeError, match="not a slotted dataclass"):
        slot_filler(Plain)
    with pytest.raises(TypeError, match="fields named"):
        slot_filler(Clash)
