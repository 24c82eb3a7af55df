"""The memoised / integer fast paths of quantity parsing give exactly the exact-fraction results (MilliValue and
Value round up), reject exactly what the fraction path rejects, and errors still name the field; the fast
ResourceList path equals the general one."""

from __future__ import annotations

from fractions import Fraction
from types import MappingProxyType

import pytest
from hypothesis import given
from hypothesis import strategies as st

from common.quantity import (
    QuantityError,
    cached_milli_value,
    cached_value,
    format_bytes,
    milli_value,
    parse_quantity,
    value,
)
from common.resources import Resources


def _ceil(q: Fraction) -> int:
    return -((-q.numerator) // q.denominator)


def _reference(text: str) -> tuple[int, int] | None:
    """(MilliValue, Value) through the exact fraction; None when the text is not a quantity."""
    try:
        q = parse_quantity(text)
    except QuantityError:
        return None
    return _ceil(q * 1000), _ceil(q)


def _fast(text: str) -> tuple[int, int] | None:
    try:
        got = (cached_milli_value(text), cached_value(text))
    except QuantityError:
        got = None
    try:
        public = (milli_value(text), value(text))
    except QuantityError:
        public = None
    assert got == public
    return got


QUANTITY = st.from_regex(
    r"[+-]?([0-9]{1,22}(\.[0-9]{0,6})?|\.[0-9]{1,6})(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?[0-9]{1,2})?",
    fullmatch=True,
)
# Near misses: digits with any one or two trailing characters, stray spaces, unicode digits.
NEAR = st.builds(
    lambda d, s: d + s,
    st.from_regex(r"[0-9]{0,6}", fullmatch=True),
    st.text(alphabet="mkKMGTPEinue+-. 0²٣", max_size=2),
)


@pytest.mark.slow
@given(st.one_of(QUANTITY, NEAR, st.text(max_size=8)))
def test_fast_paths_equal_the_fraction_path(text: str) -> None:
    assert _fast(text) == _reference(text)


@pytest.mark.parametrize(
    "text",
    ["0", "007", "5", "5m", "999m", "1000m", "1001m", "12Ki", "3G", "1E", "2Ei", "7k", "1M", "1Mi", "1n", "1u",
     "5e", "5e3", "Mi", "m", "", "1mi", "1Mm", "²", "٣m", " 5", "5 ", "+5", "-5m", "1.5Gi", "0.1", "05Ki"],
)
def test_integer_fast_path_edges(text: str) -> None:
    assert _fast(text) == _reference(text)


@given(st.integers(min_value=0, max_value=2**62))
def test_formatted_bytes_parse_back_exactly(n: int) -> None:
    assert cached_value(format_bytes(n)) == n


def test_errors_still_name_the_field_after_a_cached_failure() -> None:
    for _ in range(2):  # the second time the fast path has seen the text already
        with pytest.raises(QuantityError, match=r"spec\.x\.cpu"):
            milli_value("12q", field="spec.x.cpu")
        with pytest.raises(QuantityError, match=r"spec\.x\.memory"):
            value("1Kb", field="spec.x.memory")


@given(
    st.dictionaries(
        st.sampled_from(["cpu", "memory", "pods", "nvidia.com/gpu", "ephemeral-storage", "batch-cpu"]),
        st.one_of(QUANTITY, st.integers(min_value=-(10**6), max_value=10**6)),
        max_size=4,
    )
)
def test_resource_list_fast_path_equals_the_general_path(raw: dict[str, object]) -> None:
    try:
        general = Resources.parse(MappingProxyType(raw), field="r")  # not a dict: the general path
    except ValueError as exc:
        with pytest.raises(ValueError) as err:
            Resources.parse(raw, field="r")
        assert str(err.value) == str(exc)
        return
    fast = Resources.parse(raw, field="r")
    assert fast == general and list(fast) == list(general)
    if all(isinstance(v, str) for v in raw.values()):
        assert Resources.parse_texts(raw) == general


def test_resource_list_errors_name_the_entry() -> None:
    with pytest.raises(ValueError, match=r"Pod a/b: requests\.memory"):
        Resources.parse({"cpu": "1", "memory": "1Kb"}, field="Pod a/b: requests")
    assert Resources.parse_texts({"cpu": "1", "memory": "1Kb"}) is None
    assert Resources.parse_texts({"cpu": 1}) is None
    assert Resources.parse_texts(MappingProxyType({"cpu": "1"})) is None
    assert Resources.parse({"cpu": "0", "memory": "2Ki"}) == Resources(memory=2048)
    assert list(Resources.parse({"memory": "1", "cpu": "250m"})) == ["memory", "cpu"]


@pytest.mark.parametrize(
    "raw",
    [
        {"cpu": "2", "memory": "0012", "pods": "110", "nvidia.com/gpu": "0"},
        {"cpu": "007", "batch-cpu": "500", "memory": "17179869184"},
        {"memory": "1" * 40},
    ],
)
def test_plain_integer_texts_equal_the_general_path(raw: dict[str, str]) -> None:
    """Plain ASCII integers skip the memo in ``parse_texts``: the same values, cpu in millis."""
    fast = Resources.parse_texts(raw)
    general = Resources.parse(MappingProxyType(raw), field="r")
    assert fast == general and fast is not None and list(fast) == list(general)


def test_non_ascii_digits_are_not_plain_integers() -> None:
    assert Resources.parse_texts({"memory": "\u0661\u0662"}) is None  # Arabic-Indic digits: not a quantity
    with pytest.raises(ValueError, match=r"r\.memory"):
        Resources.parse({"memory": "\u0661\u0662"}, field="r")
