"""Shared test configuration.

With ``LOADWISE_REQUIRE_ALL=1`` (set by .ci/run) a skipped test is a failure: CI installs every
dependency, so nothing may be skipped there for lack of one.  The one exception is the public trace data in
``../shared/traces`` (outside the repository, not installable): tests that read it skip when it is absent.
Likewise a kernel feature the machine does not offer (no installing fixes it): such a skip's reason starts
with "this machine's kernel".
"""

from __future__ import annotations

import os
import re
from collections.abc import Generator
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

# Property tests check results, not speed: on a shared, loaded machine the wall-clock health check and deadline
# fail tests whose every example passed.
settings.register_profile("loadwise", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("loadwise")

REQUIRE_ALL = os.environ.get("LOADWISE_REQUIRE_ALL") == "1"
_TRACES_ABSENT = re.compile(r"shared/traces|trace[s]? (is |are )?(absent|not present)", re.IGNORECASE)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[Any]) -> Generator[None, Any, None]:
    outcome = yield
    report = outcome.get_result()
    if REQUIRE_ALL and report.skipped and not hasattr(report, "wasxfail"):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        if _TRACES_ABSENT.search(reason) or "this machine's kernel" in reason:
            return
        report.outcome = "failed"
        report.longrepr = f"skipped in CI, where every dependency must be present: {reason}"
