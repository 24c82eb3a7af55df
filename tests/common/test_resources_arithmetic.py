"""``Resources`` arithmetic between two vectors, and the entry views, give what the general Mapping path gives:
the same entries in the same order, zeros dropped."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from hypothesis import given
from hypothesis import strategies as st

from common.resources import Resources

_NAMES = st.sampled_from(["cpu", "memory", "pods", "nvidia.com/gpu", "ephemeral-storage"])
_VECTORS = st.dictionaries(_NAMES, st.integers(-3, 3), max_size=5)


class _Plain(Mapping[str, int]):
    """A mapping that is not a Resources: the arithmetic's general path."""

    def __init__(self, d: dict[str, int]) -> None:
        self.d = d

    def __getitem__(self, key: str) -> int:
        return self.d[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.d)

    def __len__(self) -> int:
        return len(self.d)


@given(_VECTORS, _VECTORS)
def test_sums_and_differences_of_two_vectors_are_the_general_ones(a: dict[str, int], b: dict[str, int]) -> None:
    left, right = Resources(a), Resources(b)
    for got, want in ((left + right, left + _Plain(right.as_dict())), (left - right, left - _Plain(right.as_dict()))):
        assert list(got.items()) == list(want.items())
        assert 0 not in got.values()


@given(_VECTORS)
def test_the_entry_views_are_the_mappings(a: dict[str, int]) -> None:
    r = Resources(a)
    assert list(r.items()) == [(k, r[k]) for k in r]
    assert list(r.keys()) == list(iter(r))
    assert list(r.values()) == [r[k] for k in r]
