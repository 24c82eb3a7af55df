"""``loadwise rebalance-plan``: one round on a snapshot file, offline, with the numbers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from loadwise.cli import main
from tests.rebalancer.helpers import T0, Cluster


def _files(tmp_path: Path, config: dict[str, object]) -> tuple[str, str]:
    c = Cluster(cpu=10, memory=32)
    for n in ("hot", "cool"):
        c.node(n)
    c.pod("a", "hot", 4000)
    c.pod("b", "hot", 3000)
    snap, conf = tmp_path / "snap.yaml", tmp_path / "rebalance.yaml"
    snap.write_text(yaml.safe_dump_all(c.objects()))
    conf.write_text(yaml.safe_dump(config))
    return str(snap), str(conf)


ARGS = {"highThresholds": {"cpu": 65, "memory": 90}, "lowThresholds": {"cpu": 35, "memory": 60}}


def test_text_plan_names_the_move_and_the_numbers(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    snap, conf = _files(tmp_path, ARGS)
    assert main(["rebalance-plan", "--snapshot", snap, "--config", conf]) == 0
    out = capsys.readouterr().out
    assert "move default/a: cpu usage(70%)>threshold(65%): evicted from hot (cpu 70% memory 6%" in out
    assert "expected on cool (cpu 0% memory 0% -> cpu 40% memory 3%)" in out


def test_json_plan(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    snap, conf = _files(tmp_path, ARGS)
    assert main(["rebalance-plan", "--snapshot", snap, "--config", conf, "-o", "json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert [(m["pod"], m["destination"], m["sourceAfter"]["cpu"]) for m in plan["moves"]] == [("default/a", "cool",
                                                                                                 30.0)]
    assert plan["time"] == "2023-11-14T22:13:20Z" and T0 == 1_700_000_000.0
    assert {n["name"]: n["class"] for n in plan["nodes"]} == {"cool": "low", "hot": "high"}


def test_bad_config_names_file_and_field(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    snap, conf = _files(tmp_path, {**ARGS, "lowThresholds": {"cpu": 80, "memory": 60}})
    assert main(["rebalance-plan", "--snapshot", snap, "--config", conf]) == 2
    err = capsys.readouterr().err
    assert "rebalance.yaml: lowThresholds.cpu: 80 is above highThresholds.cpu (65)" in err
