"""The scheduler conf: numbers that are not finite are refused naming their key (strict arguments) or fall back
to the default (Volcano's lenient ones), and a hot reload that fails keeps the last good conf running and is
counted once per rejected file."""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

import pytest
import yaml

from common.clock import FakeClock
from common.cluster.memory import MemoryCluster
from common.config import ConfigError
from scheduler.conf import ConfHolder, parse_conf
from scheduler.engine import Scheduler
from scheduler.scoring.binpack import parse_binpack_arguments
from scheduler.scoring.nodeorder import parse_nodeorder_arguments
from scheduler.scoring.usage import UsageArgs, parse_usage_arguments
from tests.edit import replaced, walk

ROOT = Path(__file__).resolve().parents[2]
LOADAWARE = yaml.safe_load((ROOT / "sim" / "confs" / "loadaware.yaml").read_text())
NON_FINITE = (math.nan, math.inf, -math.inf)


ARGUMENT_NUMBERS = [p for p, v in walk(LOADAWARE)
                    if "arguments" in p and isinstance(v, int | float) and not isinstance(v, bool)]


def test_the_conf_has_numeric_arguments_to_spoil() -> None:
    assert len(ARGUMENT_NUMBERS) >= 8  # thresholds, weights, scaling factors, the scoring strategy's weights


@pytest.mark.parametrize("value", NON_FINITE)
@pytest.mark.parametrize("path", ARGUMENT_NUMBERS, ids=lambda p: ".".join(map(str, p)))
def test_non_finite_argument_is_refused_naming_its_key(path: tuple[Any, ...], value: float) -> None:
    with pytest.raises(ConfigError) as err:
        parse_conf(replaced(LOADAWARE, path, value), source="conf.yaml")
    key = str(path[-1]) if not isinstance(path[-1], int) else str(path[-2])
    assert key in str(err.value)


def test_lenient_volcano_arguments_keep_their_default_for_non_finite_numbers() -> None:
    for v in NON_FINITE:
        assert parse_binpack_arguments({"binpack.cpu": v, "binpack.weight": v}) == parse_binpack_arguments({})
        assert parse_nodeorder_arguments({"leastrequested.weight": v}) == parse_nodeorder_arguments({})
        got = parse_usage_arguments({"estimator": {"request_ratio": v, "burst_ratio": v, "risk_threshold": v}})
        d = UsageArgs()
        assert (got.request_ratio, got.burst_ratio, got.risk_threshold) == (d.request_ratio, d.burst_ratio,
                                                                             d.risk_threshold)


def _write(path: Path, doc: dict[str, Any], tick: int) -> None:
    path.write_text(yaml.safe_dump(doc))
    os.utime(path, (1_700_000_000 + tick, 1_700_000_000 + tick))  # a distinct mtime per write


def test_reload_keeps_the_last_good_conf_and_counts_each_rejected_file_once(tmp_path: Path) -> None:
    path = tmp_path / "scheduler.yaml"
    _write(path, LOADAWARE, 0)
    holder = ConfHolder(str(path))
    sched = Scheduler(MemoryCluster(clock=FakeClock(0.0)), holder, clock=FakeClock(0.0))
    good = holder.conf

    def reloads() -> float | None:
        return sched.metrics.registry.get_sample_value("loadwise_scheduler_conf_reload_errors_total")

    bad = replaced(LOADAWARE, ARGUMENT_NUMBERS[0], math.inf)
    _write(path, bad, 1)
    for _ in range(3):  # three sessions while the bad file stays
        sched.run_once()
    assert holder.conf is good and "keeping the previous conf" in holder.last_error
    assert str(ARGUMENT_NUMBERS[0][-1]) in holder.last_error
    assert holder.rejected == 1 and reloads() == 1

    _write(path, bad, 2)  # saved again, still bad: another rejected file
    sched.run_once()
    assert holder.rejected == 2 and reloads() == 2

    path.write_bytes(b"\xff\xfe tiers")  # not text: rejected like any bad conf (was a UnicodeDecodeError)
    os.utime(path, (1_700_000_010, 1_700_000_010))
    sched.run_once()
    assert holder.rejected == 3 and holder.last_error.startswith(f"{path}: not a UTF-8 text file")
    path.write_text("tiers: [\n")
    os.utime(path, (1_700_000_011, 1_700_000_011))
    sched.run_once()
    assert holder.rejected == 4 and holder.last_error.startswith(f"{path}: invalid YAML/JSON at line 2, column 1: ")
    assert "\n" not in holder.last_error  # one line for the log and the explain output

    path.unlink()  # unreadable: reported once while it lasts
    sched.run_once()
    sched.run_once()
    assert holder.rejected == 5 and "No such file" in holder.last_error and holder.conf is good

    fixed = replaced(LOADAWARE, ARGUMENT_NUMBERS[0], 50)
    _write(path, fixed, 3)
    sched.run_once()
    assert holder.conf is not good and holder.last_error == "" and reloads() == 5
