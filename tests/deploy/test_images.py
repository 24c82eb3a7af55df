"""Dockerfile.agent and Dockerfile.scheduler: multi-stage, pinned, labelled, ``loadwise`` entrypoint, and
what the manifests expect of them (ports, users).  No Docker daemon is needed: the files are read, and the
pinned lock is checked against pyproject.toml."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.deploy.kustomize import DEPLOY, build

ROOT = DEPLOY.parent
SIM_ONLY = {"matplotlib", "tqdm"}  # imported lazily by `loadwise sim` alone; not in the images
LABELS = ("title", "description", "source", "licenses", "version", "revision", "created")


def instructions(path: Path) -> list[tuple[str, str]]:
    text = re.sub(r"\\\n", " ", path.read_text(encoding="utf-8"))
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            word, _, rest = line.partition(" ")
            out.append((word.upper(), rest.strip()))
    return out


def lock() -> dict[str, str]:
    pins = {}
    for line in (DEPLOY / "images" / "requirements.lock").read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, sep, version = line.partition("==")
            assert sep and re.fullmatch(r"[0-9][0-9A-Za-z.]*", version), f"not an exact pin: {line}"
            pins[canonicalize_name(name)] = version
    return pins


@pytest.mark.parametrize("component", ["agent", "scheduler"])
def test_dockerfile(component: str) -> None:
    ins = instructions(ROOT / f"Dockerfile.{component}")
    args = {v.split("=", 1)[0]: v.split("=", 1)[1] for k, v in ins if k == "ARG" and "=" in v}
    base = args["PYTHON_IMAGE"]
    assert re.fullmatch(r"python:3\.11\.\d+-slim-[a-z]+", base), base  # slim and pinned to a patch release
    froms = [v for k, v in ins if k == "FROM"]
    assert len(froms) == 2 and froms[0].endswith(" AS build") and froms[1] == "${PYTHON_IMAGE}"
    runs = " ".join(v for k, v in ins if k == "RUN")
    assert "-r /tmp/requirements.lock" in runs and "--no-deps /src" in runs
    assert ("COPY", "--from=build /opt/loadwise /opt/loadwise") in ins
    assert ("ENTRYPOINT", '["loadwise"]') in ins and ("CMD", f'["{component}"]') in ins
    labels = " ".join(v for k, v in ins if k == "LABEL")
    for label in LABELS:
        assert f"org.opencontainers.image.{label}=" in labels
    user = [v for k, v in ins if k == "USER"][-1]
    expose = int([v for k, v in ins if k == "EXPOSE"][0])
    objects = build(DEPLOY / "overlays" / "observe")
    (pod,) = [
        o["spec"]["template"]["spec"]
        for o in objects
        if o["metadata"]["name"] == f"loadwise-{component}" and o["kind"] in ("DaemonSet", "Deployment")
    ]
    (container,) = pod["containers"]
    assert container["image"].startswith(f"ghcr.io/loadwise/loadwise-{component}:")
    assert container["args"][0] == component
    assert container["ports"][0]["containerPort"] == expose
    if component == "scheduler":  # non-root where the role allows: the same uid in image and pod
        assert user == "65532:65532" and pod["securityContext"]["runAsUser"] == 65532
    else:  # the agent reads every pod's cgroup files: root, but with no capabilities
        assert user == "0:0" and container["securityContext"]["capabilities"] == {"drop": ["ALL"]}


def test_lock_pins_every_runtime_dependency() -> None:
    pins = lock()
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    for spec in project["dependencies"]:
        req = Requirement(spec)
        name = canonicalize_name(req.name)
        if name in SIM_ONLY:
            assert name not in pins
            continue
        assert name in pins, f"{req.name} is a runtime dependency but not pinned in requirements.lock"
        assert req.specifier.contains(pins[name]), f"{req.name}=={pins[name]} does not satisfy {req.specifier}"


def test_lock_is_closed_under_requirements() -> None:
    """Every pinned package's own requirements are pinned too (the image installs with --no-deps), at the
    versions the test suite runs with."""
    from importlib.metadata import PackageNotFoundError, distribution

    pins = lock()
    for name in pins:
        try:
            dist = distribution(name)
        except PackageNotFoundError:
            pytest.fail(f"{name} is pinned but not installed in the test environment")
        assert dist.version == pins[name], f"{name}: the lock pins {pins[name]}, the tests run {dist.version}"
        for spec in dist.requires or []:
            req = Requirement(spec)
            if req.marker is not None and not req.marker.evaluate({"extra": ""}):
                continue
            assert canonicalize_name(req.name) in pins, f"{name} needs {req.name}, which the lock does not pin"
