"""The one lenient reader of Volcano-style plugin arguments, and the plugins that use it agreeing on a value."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.batch.args import CapacityArgs
from scheduler.lenient import bool_arg, float_arg, int_arg
from scheduler.scoring.binpack import parse_binpack_arguments
from scheduler.scoring.nodeorder import parse_nodeorder_arguments
from scheduler.scoring.usage import parse_usage_arguments


@pytest.mark.parametrize("value, expected", [(3, 3), (-2, -2), (0, 0), ("3", 7), (2.5, 7), (True, 7), (None, 7),
                                             (float("inf"), 7)])
def test_int_is_a_yaml_integer(value: Any, expected: int) -> None:
    assert int_arg({"k": value}, "k", 7) == expected
    assert int_arg({}, "k", 7) == 7


@pytest.mark.parametrize("value, expected", [(0.5, 0.5), (2, 2.0), ("0.5", 9.0), (True, 9.0),
                                             (float("nan"), 9.0), (float("-inf"), 9.0)])
def test_float_is_a_finite_number(value: Any, expected: float) -> None:
    assert float_arg({"k": value}, "k", 9.0) == expected


@pytest.mark.parametrize("value, expected", [(True, True), (False, False), ("False", False), (" t ", True),
                                             ("1", True), ("0", False), ("yes", None), (1, None), (None, None)])
def test_bool_is_a_yaml_boolean_or_a_boolean_word(value: Any, expected: bool | None) -> None:
    assert bool_arg({"k": value}, "k", True) is (True if expected is None else expected)
    assert bool_arg({"k": value}, "k", False) is (False if expected is None else expected)


def test_every_volcano_style_plugin_reads_a_string_number_the_same_way() -> None:
    # binpack and nodeorder used to accept "3" (int("3")) where the batch plugins and Volcano keep the default
    assert parse_binpack_arguments({"binpack.cpu": "3", "binpack.weight": "3"}) == parse_binpack_arguments({})
    assert parse_nodeorder_arguments({"leastrequested.weight": "3"}) == parse_nodeorder_arguments({})
    assert parse_usage_arguments({"usage.weight": "3"}).weight == parse_usage_arguments({}).weight
    assert CapacityArgs.from_raw({"ancestorReclaimLevel": "3"}) == CapacityArgs.from_raw({})
    assert parse_binpack_arguments({"binpack.cpu": 3}).per_resource["cpu"] == 3
