"""docs/ against the code: every setting the code reads is documented, and every link resolves.

The keys are read from the code, not listed by hand: the agent config's accepted keys, every plugin argument
the plugins declare, every registered plugin, and every field of the CRD schemas.
"""

from __future__ import annotations

import importlib
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from agent import config as agent_config
from scheduler.framework.plugin import plugin_builders
from tests.deploy.kustomize import DEPLOY

ROOT = DEPLOY.parent
DOCS = ROOT / "docs"


def configure() -> str:
    return (DOCS / "configure.md").read_text()


def plugin_argument_keys() -> dict[str, str]:
    """argument key -> the plugin that reads it, from each plugin module's declared ``ARGUMENTS`` (a nested key is
    declared as ``parent/child``; both parts must be documented).  tests/scheduler/test_plugin_arguments.py
    holds the declarations to what the plugins actually read."""
    out: dict[str, str] = {}
    for name, builder in plugin_builders().items():
        for key in importlib.import_module(builder.__module__).ARGUMENTS:
            for part in key.split("/"):
                out.setdefault(part, name)
    return out


def test_every_plugin_argument_is_documented() -> None:
    keys = plugin_argument_keys()
    assert {"usageThresholds", "overcommit-factor", "scoringStrategy", "binpack.weight", "risk_factor"} <= set(keys)
    text = configure()
    missing = {k: w for k, w in keys.items() if not any(f in text for f in (f"`{k}`", f".{k}`", f"`{k}."))}
    assert not missing, f"docs/configure.md lacks these plugin arguments: {missing}"


def test_every_registered_plugin_is_documented() -> None:
    text = configure()
    missing = [name for name in plugin_builders() if f"`{name}`" not in text]
    assert not missing, f"docs/configure.md lacks plugins {missing}"


def test_every_agent_config_key_is_documented() -> None:
    text = configure()
    props = agent_config.schema()["properties"]
    keys = set(props) - {"waterline"}
    keys |= {f"waterline.{k}" for k in props["waterline"]["properties"]}
    missing = sorted(k for k in keys if f"`{k}`" not in text)
    assert not missing, f"docs/configure.md lacks agent config keys {missing}"


def schema_fields(schema: dict[str, Any], prefix: str = "") -> set[str]:
    out = set()
    for name, sub in (schema.get("properties") or {}).items():
        out.add(name)
        out |= schema_fields(sub, f"{prefix}{name}.")
    if "items" in schema:
        out |= schema_fields(schema["items"], prefix)
    return out


@pytest.mark.parametrize("crd", sorted((DEPLOY / "crds").glob("*_*.yaml")), ids=lambda p: p.stem)
def test_every_spec_field_is_documented(crd: Path) -> None:
    (doc,) = [d for d in yaml.safe_load_all(crd.read_text()) if d]
    spec = doc["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    text = configure()
    # the sub-fields of label selectors and resource maps are Kubernetes' own, not ours to document
    ignored = {"matchLabels", "matchExpressions", "key", "operator", "values", "resources", "devices"}
    missing = sorted(f for f in schema_fields(spec) - ignored if f not in text)
    assert not missing, f"docs/configure.md lacks {doc['spec']['names']['kind']} fields {missing}"


def test_links_resolve() -> None:
    for doc in sorted(DOCS.glob("*.md")):
        for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", doc.read_text()):
            if "://" in target:
                continue
            assert (doc.parent / target).exists(), f"{doc.name}: broken link {target}"
