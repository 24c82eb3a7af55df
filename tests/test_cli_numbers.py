"""Numeric flags of every subcommand refuse what cannot be run with (nan, inf, out of range) at parse time,
naming the flag, instead of hanging, spinning or failing with a traceback later."""

from __future__ import annotations

import argparse

import pytest

from loadwise.argtypes import non_negative_int, port, positive_float, positive_int
from loadwise.cli import main


@pytest.mark.parametrize(
    ("argv", "flag"),
    [
        (["sim", "--hours", "nan"], "--hours"),  # hung in the workload generator
        (["sim", "--hours", "inf"], "--hours"),
        (["sim", "--tick", "nan"], "--tick"),  # was a ValueError traceback
        (["sim", "--trace-load", "nan"], "--trace-load"),  # was silently accepted
        (["sim", "--jobs", "-2"], "--jobs"),
        (["sim", "--nodes", "1.5"], "--nodes"),
        (["scheduler", "--memory", "--schedule-period", "nan"], "--schedule-period"),  # spun without sleeping
        (["scheduler", "--memory", "--schedule-period", "-1"], "--schedule-period"),
        (["scheduler", "--memory", "--port", "70000"], "--port"),  # was an OverflowError traceback
        (["scheduler", "--memory", "--lease-duration", "inf"], "--lease-duration"),
        (["qos-plan", "--policy", "p", "--state", "s", "--eviction-window", "nan"], "--eviction-window"),
        (["qos-plan", "--policy", "p", "--state", "s", "--max-evictions", "-1"], "--max-evictions"),
        (["agent", "--port", "99999"], "--port"),
    ],
)
def test_bad_number_exits_2_naming_the_flag(argv: list[str], flag: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    assert f"argument {flag}:" in capsys.readouterr().err


def test_types_accept_what_they_should() -> None:
    assert positive_float("0.25") == 0.25 and positive_float("1e3") == 1000.0
    assert positive_int("3") == 3 and non_negative_int("0") == 0 and port("0") == 0 and port("65535") == 65535
    for bad, kind in (("0", positive_float), ("-inf", positive_float), ("0", positive_int), ("x", port),
                      ("-1", non_negative_int), ("65536", port)):
        with pytest.raises(argparse.ArgumentTypeError):
            kind(bad)


@pytest.mark.parametrize("value", [float("nan"), float("inf"), 0.0, -1.0])
def test_simulation_options_refuse_non_finite_or_non_positive_times(value: float) -> None:
    from sim.run import SimOptions
    from sim.synthetic import SyntheticConfig

    with pytest.raises(ValueError, match="hours must be a positive number"):
        SyntheticConfig(nodes=3, hours=value)
    with pytest.raises(ValueError, match="tick_seconds must be a positive number"):
        SimOptions(tick_seconds=value)
    with pytest.raises(ValueError, match="hours must be a positive number"):
        SimOptions(hours=value)
