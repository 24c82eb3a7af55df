"""docs/ against the code: every setting the code reads is documented, and every link resolves.

The keys are read from the code, not listed by hand: the agent config's accepted keys, every plugin argument
the scheduler's argument readers look up, every registered plugin, and every field of the CRD schemas.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from agent import config as agent_config
from scheduler.framework.plugin import plugin_builders
from scheduler.scoring import nodeorder
from tests.deploy.kustomize import DEPLOY

ROOT = DEPLOY.parent
DOCS = ROOT / "docs"
# the plugin's Arguments object anywhere, and the raw argument maps (or nested maps of them) inside the
# argument-parsing modules; elsewhere ``raw`` may well be a pod's affinity term, which is not an argument
_ARGS = {"args", "arguments"}
_ARG_MAPS = {"raw", "agg_raw", "est", "thresholds"}
_ARG_MODULES = ("scheduler/loadaware/args.py", "scheduler/batch/args.py", "scheduler/scoring/")
_NOT_ARGUMENTS = {"name", "arguments", "weight", "enableHierarchy", "cpu", "mem", "memory"}


def configure() -> str:
    return (DOCS / "configure.md").read_text()


def plugin_argument_keys() -> dict[str, str]:
    """argument key -> where the code reads it, from ``raw.get("key")``-style calls under scheduler/."""
    out: dict[str, str] = {}
    for path in sorted((ROOT / "scheduler").rglob("*.py")):
        if path.parent.name == "conf":
            continue
        rel = str(path.relative_to(ROOT))
        maps = _ARGS | (_ARG_MAPS if rel.startswith(_ARG_MODULES) else set())
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Call):
                continue
            f = node.func
            key: Any = None
            if (
                isinstance(f, ast.Attribute)
                and isinstance(f.value, ast.Name)
                and f.value.id in maps
                and f.attr in ("get", "get_int", "get_float", "get_bool")
                and node.args
            ):
                key = node.args[0]
            elif len(node.args) > 1 and isinstance(node.args[0], ast.Name) and node.args[0].id in maps:
                key = node.args[1]
            if isinstance(key, ast.Constant) and isinstance(key.value, str) and key.value not in _NOT_ARGUMENTS:
                out.setdefault(key.value, f"{rel}:{node.lineno}")
    out.update({k: "scheduler/scoring/nodeorder.py" for k in nodeorder._KEYS})
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
    keys = set(agent_config._TOP_KEYS) - {"waterline"}
    keys |= {f"waterline.{k}" for k in ("enabled", "dryRun", "intervalSeconds", "policyFile")}
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
