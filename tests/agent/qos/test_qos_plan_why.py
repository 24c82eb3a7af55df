"""``loadwise qos-plan`` says why a tick did what it did, or nothing; the documented example is what it prints."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from loadwise.cli import main

ROOT = Path(__file__).resolve().parents[3]
POLICY = ROOT / "deploy" / "examples" / "waterlinepolicy.yaml"
STATE = ROOT / "docs" / "examples" / "qos-state.json"


def _run(capsys: pytest.CaptureFixture[str], *extra: str) -> str:
    assert main(["qos-plan", "--policy", str(POLICY), "--state", str(STATE), *extra]) == 0
    return capsys.readouterr().out


def test_a_quiet_tick_says_how_many_samples_are_over(capsys: pytest.CaptureFixture[str]) -> None:
    ticks = json.loads(_run(capsys, "-o", "json"))
    cpu = ticks[0]["rules"][0]
    assert (cpu["rule"], cpu["value"], cpu["waterline"], cpu["over"]) == ("colocation.cpu-usage", 7000, 6000, True)
    assert (cpu["samplesOver"], cpu["samplesNeeded"], cpu["status"]) == (1, 2, "none")
    assert ticks[0]["actions"] == [] and ticks[1]["triggered"] == ["colocation.cpu-usage"]
    active = ticks[2]["rules"][0]
    assert (active["active"], active["samplesUnder"], active["restoreNeeded"]) == (True, 1, 2)
    # restored on tick 3, but scheduling stays off for the action's 300 s cool-down after the trigger on tick 1
    assert ticks[3]["restored"] == ["colocation.cpu-usage"] and ticks[3]["scheduling"] == "disabled"
    assert ticks[3]["schedulingCoolDownUntil"] == "2024-03-01T12:05:10Z"
    assert ticks[0]["evictionRateLimit"] == {"evictionsInWindow": 0, "max": 1, "windowSeconds": 10.0}


def test_text_names_the_missing_samples(capsys: pytest.CaptureFixture[str]) -> None:
    out = _run(capsys)
    assert ("rule colocation.cpu-usage: cpu_total_usage 7000 > 6000: 1 of 2 consecutive samples over the line "
            "needed to trigger") in out
    assert "scheduling stays disabled until 2024-03-01T12:05:10Z" in out


def test_a_preview_rule_is_reported_as_triggered(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """crane's analyzer logs a Preview rule's trigger like any other and leaves it out of the actions."""
    state = json.loads(STATE.read_text())
    state["node"]["metrics"]["memory_total_utilization"] = 90
    for tick in state["ticks"]:
        tick.setdefault("node", {}).setdefault("metrics", {})["cpu_total_usage"] = 1000
    (tmp_path / "s.json").write_text(json.dumps(state))
    assert main(["qos-plan", "--policy", str(POLICY), "--state", str(tmp_path / "s.json")]) == 0
    out = capsys.readouterr().out
    assert "triggered (Preview: reported only): colocation.memory-utilization" in out
    assert "evict" not in out


def test_the_documented_example_is_what_it_prints(capsys: pytest.CaptureFixture[str]) -> None:
    doc = (ROOT / "docs" / "qos-plan.md").read_text()
    assert _run(capsys).strip() in doc
    assert json.loads(STATE.read_text()) == json.loads(doc.split("```json\n", 1)[1].split("```", 1)[0])
