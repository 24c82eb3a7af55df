"""``slot_filler``: an object filled slot by slot is what the dataclass's constructor makes."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from common.cluster import EventRecord
from common.objects import PodView
from common.slots import slot_filler
from scheduler.framework.api import JobInfo, TaskInfo
from scheduler.framework.template import TaskTemplate


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


@pytest.mark.parametrize("cls", [PodView, EventRecord, TaskInfo, JobInfo, TaskTemplate])
def test_the_per_pod_classes_are_filled_field_by_field(cls: type) -> None:
    """Each class filled per pod: every field, set by name, reads back as the value given."""
    names = [f.name for f in fields(cls)]
    values: dict[str, Any] = {name: object() for name in names}
    made = slot_filler(cls)(object.__new__(cls), **values)
    assert all(getattr(made, name) is values[name] for name in names)


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
