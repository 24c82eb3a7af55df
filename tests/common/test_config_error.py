"""ConfigError: the full text names source and field; ``message`` is the bare reason."""

from __future__ import annotations

from common.config import ConfigError


def test_config_error_keeps_the_bare_message() -> None:
    exc = ConfigError("must be > 0", field="spec.value", source="policy.yaml")
    assert str(exc) == "policy.yaml: spec.value: must be > 0"
    assert exc.message == "must be > 0"
