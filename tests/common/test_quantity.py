from decimal import Decimal
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from common.quantity import (
    QuantityError,
    format_bytes,
    format_milli,
    milli_value,
    parse_quantity,
    value,
)

SUFFIX = {
    "": Decimal(1),
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "k": Decimal("1e3"),
    "M": Decimal("1e6"),
    "G": Decimal("1e9"),
    "T": Decimal("1e12"),
    "P": Decimal("1e15"),
    "E": Decimal("1e18"),
    "Ki": Decimal(2**10),
    "Mi": Decimal(2**20),
    "Gi": Decimal(2**30),
    "Ti": Decimal(2**40),
    "Pi": Decimal(2**50),
    "Ei": Decimal(2**60),
}


@pytest.mark.parametrize(
    "text,millis,val",
    [
        ("1", 1000, 1),
        ("250m", 250, 1),
        ("1.5", 1500, 2),
        ("0.1", 100, 1),
        ("100u", 1, 1),  # MilliValue rounds up
        ("1n", 1, 1),
        ("1e3", 1_000_000, 1000),
        ("1E-3", 1, 1),
        ("2Ki", 2_048_000, 2048),
        ("1.5Gi", 1_610_612_736_000, 1_610_612_736),
        ("-1", -1000, -1),
        (".5", 500, 1),
        ("1.", 1000, 1),
        ("+3k", 3_000_000, 3000),
    ],
)
def test_known_values(text: str, millis: int, val: int) -> None:
    assert milli_value(text) == millis
    assert value(text) == val


@pytest.mark.parametrize("bad", ["", "abc", "1.5.5", "1Kb", "Mi", "1 Gi", "1e", "--1", "1mi", "0x10", "1e99999"])
def test_garbage_rejected_with_clear_error(bad: str) -> None:
    with pytest.raises(QuantityError) as err:
        parse_quantity(bad, field="spec.containers[0].resources.requests.cpu")
    assert "spec.containers[0].resources.requests.cpu" in str(err.value)


def test_non_string_types() -> None:
    assert parse_quantity(3) == 3
    assert parse_quantity(0.1) == Fraction(1, 10)
    with pytest.raises(QuantityError):
        parse_quantity(True)
    with pytest.raises(QuantityError):
        parse_quantity(float("nan"))


@given(
    st.decimals(min_value=0, max_value=10**6, places=3, allow_nan=False, allow_infinity=False),
    st.sampled_from(sorted(SUFFIX)),
)
def test_parse_matches_exact_decimal(number: Decimal, suffix: str) -> None:
    text = f"{number}{suffix}"
    expected = Fraction(number * SUFFIX[suffix])
    assert parse_quantity(text) == expected
    # rounding up, as Quantity.Value / MilliValue do
    assert value(text) == -((-expected.numerator) // expected.denominator)
    m = expected * 1000
    assert milli_value(text) == -((-m.numerator) // m.denominator)


@given(st.integers(min_value=0, max_value=10**12))
def test_milli_round_trip(n: int) -> None:
    assert milli_value(format_milli(n)) == n


@given(st.integers(min_value=0, max_value=2**62))
def test_bytes_round_trip(n: int) -> None:
    assert value(format_bytes(n)) == n


def test_canonical_formats() -> None:
    assert format_milli(2000) == "2"
    assert format_milli(250) == "250m"
    assert format_bytes(1536 * 1024) == "1536Ki"
    assert format_bytes(2 * 2**30) == "2Gi"
    assert format_bytes(1000) == "1000"
