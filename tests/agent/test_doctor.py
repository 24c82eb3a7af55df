"""``loadwise doctor`` reports what it saw: the cgroup mounts as the kernel lists them, a driver it had to guess,
an unreachable API server once (no invented HTTP status), RBAC skipped with the reason, an honest summary."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.config import AgentConfig
from agent.doctor import FAIL, OK, SKIP, WARN, Check, cgroup_mounts, check_host
from loadwise.cli import main
from loadwise.cmd_doctor import summary

HYBRID = """\
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw,relatime - cgroup cgroup rw,cpu,cpuacct
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw,nsdelegate
"""


def test_mounts_are_read_from_mountinfo() -> None:
    assert cgroup_mounts(HYBRID) == [("/sys/fs/cgroup/cpu,cpuacct", "cgroup", "cpu,cpuacct"),
                                     ("/sys/fs/cgroup/memory", "cgroup", "memory"),
                                     ("/sys/fs/cgroup/unified", "cgroup2", "")]


def test_the_real_cgroup2_mount_next_to_v1_is_reported() -> None:
    """This machine mounts cgroup2 at /sys/fs/cgroup/unified next to the v1 hierarchies."""
    mounts = cgroup_mounts(Path("/proc/self/mountinfo").read_text())
    if not any(kind == "cgroup2" for _, kind, _ in mounts) or not any(kind == "cgroup" for _, kind, _ in mounts):
        pytest.skip("this host is not hybrid (cgroup2 next to v1)")
    checks, _ = check_host(AgentConfig(proc_root="/nonexistent"))  # falls back to /proc/self/mountinfo
    (mounts_check,) = [c for c in checks if c.name == "cgroup mounts"]
    v2 = next(m for m, kind, _ in mounts if kind == "cgroup2")
    assert mounts_check.verdict == OK and f"cgroup2 at {v2}" in mounts_check.detail
    assert "hybrid: cgroup2 next to v1" in mounts_check.detail


def test_a_guessed_driver_is_a_warning(tmp_path: Path) -> None:
    (tmp_path / "cpu,cpuacct").mkdir()
    (tmp_path / "memory").mkdir()
    checks, layout = check_host(AgentConfig(cgroup_root=str(tmp_path), proc_root="/proc"))
    assert layout is not None and layout.driver == "systemd"
    (cgroup,) = [c for c in checks if c.name == "cgroup"]
    assert cgroup.verdict == WARN and "driver systemd assumed: neither kubepods.slice nor kubepods" in cgroup.detail
    (tmp_path / "cpu,cpuacct" / "kubepods.slice").mkdir()
    checks, _ = check_host(AgentConfig(cgroup_root=str(tmp_path), proc_root="/proc"))
    (cgroup,) = [c for c in checks if c.name == "cgroup"]
    assert cgroup.verdict == OK and "kubepods.slice found" in cgroup.detail


def test_summary_does_not_call_warnings_a_pass() -> None:
    checks = [Check("a", OK, ""), Check("b", WARN, ""), Check("c", SKIP, "why")]
    assert summary(checks) == "1 ok, 1 warnings, 0 failed, 1 skipped: passed with warnings"
    assert summary([Check("a", OK, "")]).endswith(": all checks passed")
    assert summary([Check("a", FAIL, "")]).endswith(": FAILED")


def test_an_unreachable_api_server_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("""\
apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: abc}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
""")
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig))  # honoured without --kubeconfig
    assert main(["doctor", "--node", "n1"]) == 1
    out = capsys.readouterr()
    lines = out.out.splitlines()
    api = [line for line in lines if line[7:].startswith("api")]
    assert len(api) == 1 and api[0].startswith("[FAIL] api: reachable")
    assert "cannot reach the API server" in api[0] and "Connection refused" in api[0]
    assert "HTTP 503" not in out.out and "Traceback" not in out.out + out.err
    assert any(line.startswith("[SKIP] rbac") and "unreachable" in line for line in lines)
    assert lines[-1].endswith(": FAILED")


def test_an_unloadable_kubeconfig_fails_the_api_check_and_says_why_rbac_is_skipped(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("apiVersion: v1\nkind: Config\n")  # no cluster, no context
    assert main(["doctor", "--node", "n1", "--kubeconfig", str(kubeconfig)]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert [line[:12] for line in lines if line[7:].startswith(("api", "rbac"))] == ["[FAIL] api  ", "[SKIP] rbac "]
    assert any(line.startswith("[SKIP] rbac") and "no API client" in line for line in lines)
