"""One CLI style: every flag has help, ``-o text|json`` with text by default wherever there is output, usage and
exit 2 without a command, structured logs, and no ``_created`` series."""

from __future__ import annotations

import argparse
import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry, Counter, generate_latest

from loadwise.cli import SUBCOMMANDS, build_parser, main
from loadwise.logs import setup_logging


def _subparsers() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(sub.choices)


@pytest.mark.parametrize("command", sorted(SUBCOMMANDS))
def test_every_flag_has_help(command: str) -> None:
    parser = _subparsers()[command]
    missing = [a.option_strings for a in parser._actions if a.option_strings and not a.help]
    assert not missing, f"loadwise {command}: flags without help: {missing}"


@pytest.mark.parametrize("command", sorted(SUBCOMMANDS))
def test_one_output_flag(command: str) -> None:
    parser = _subparsers()[command]
    assert not any("--json" in a.option_strings for a in parser._actions)
    (output,) = [a for a in parser._actions if "--output" in a.option_strings] or [None]
    if output is None:
        assert command in ("agent", "scheduler")  # daemons: no report to format
        return
    assert output.option_strings == ["-o", "--output"] and output.default == "text"
    assert {"text", "json"} <= set(output.choices or ())


def test_no_command_prints_usage_and_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: loadwise") and "a command is required" in err


@pytest.mark.parametrize("fmt", ["logfmt", "json"])
def test_structured_logs(fmt: str, capsys: pytest.CaptureFixture[str]) -> None:
    setup_logging("info", fmt)
    try:
        logging.getLogger("loadwise.test").info("action %s", {"pod": "default/web", "cpu": 1})
        try:
            raise ValueError("bad\nthing")
        except ValueError:
            logging.getLogger("loadwise.test").exception("failed")
        lines = capsys.readouterr().err.splitlines()
    finally:
        logging.getLogger().handlers.clear()
    assert len(lines) == 2  # one line per record, the traceback folded into a field
    if fmt == "json":
        first, second = (json.loads(line) for line in lines)
        assert first["msg"] == 'action {"pod":"default/web","cpu":1}' and first["level"] == "info"
        assert second["error"] == "ValueError: bad\nthing"
    else:
        assert lines[0].endswith('logger=loadwise.test msg="action {\\"pod\\":\\"default/web\\",\\"cpu\\":1}"')
        assert lines[0].startswith("time=") and " level=info " in lines[0]
        assert 'error="ValueError: bad\\nthing"' in lines[1]


def test_counters_have_no_created_series(capsys: pytest.CaptureFixture[str]) -> None:
    main(["explain", "--snapshot", "docs/examples/explain-snapshot.yaml", "-o", "json"])  # any command: main() sets it
    capsys.readouterr()
    registry = CollectorRegistry()
    Counter("loadwise_test_total", "a counter", registry=registry).inc()
    text = generate_latest(registry).decode()
    assert "loadwise_test_total 1.0" in text and "_created" not in text


def test_a_closed_pipe_ends_quietly(tmp_path: Path) -> None:
    """``loadwise explain ... | head -1``: no BrokenPipeError traceback once the reader has gone."""
    import yaml

    from tests.scheduler.factories import node, pod

    root = Path(__file__).resolve().parents[1]
    snapshot = tmp_path / "snap.yaml"  # enough pods that the report outgrows the pipe's buffer
    snapshot.write_text(yaml.safe_dump_all([node("a"), node("b"), *(pod(f"p{i}", cpu="10m") for i in range(150))]))
    proc = subprocess.Popen(
        [sys.executable, "-m", "loadwise", "explain", "--snapshot", str(snapshot), "-o", "json"],
        cwd=root, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={**os.environ, "PYTHONPATH": str(root)})
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.readline()
    proc.stdout.close()  # the reader goes away after one line, as head does
    err = proc.stderr.read().decode()
    proc.wait(timeout=60)
    assert "Traceback" not in err and "BrokenPipeError" not in err
    assert proc.returncode in (0, 141)


def test_credentials_follow_kubectls_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from common.cluster.kube import IN_CLUSTER, credentials_source

    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    assert credentials_source(None) == ""
    (tmp_path / ".kube").mkdir()
    (tmp_path / ".kube" / "config").write_text("{}")
    assert credentials_source(None) == str(tmp_path / ".kube" / "config")
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1")
    assert credentials_source(None) == IN_CLUSTER
    monkeypatch.setenv("KUBECONFIG", "/a:/b")
    assert credentials_source(None) == "/a:/b"
    assert credentials_source("/flag") == "/flag"


def test_a_command_imports_neither_the_other_commands_nor_the_report_plotting() -> None:
    """``loadwise sim`` (no ``--out``) starts without importing the other subcommands' modules or matplotlib."""
    code = ("import sys; from loadwise.cli import main; main(['sim', '--nodes', '2', '--hours', '0.05', "
            "'--compare', 'requests', '--no-progress', '-o', 'json']); "
            "print('LOADED', sorted(m for m in sys.modules if m == 'matplotlib' or m.startswith('loadwise.cmd_')), "
            "file=sys.stderr)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    assert "LOADED ['loadwise.cmd_sim']" in out.stderr, out.stderr[-2000:]
