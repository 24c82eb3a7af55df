"""The LICENSE is the Apache-2.0 text the packaging and images declare, and docs/install.md's build and push
commands name the Dockerfiles and the image names the manifests use."""

from __future__ import annotations

import hashlib
import re
import tomllib

import yaml

from tests.deploy.kustomize import DEPLOY

ROOT = DEPLOY.parent
# sha256 of the Apache License 2.0 as the Apache Software Foundation publishes it (LICENSE-2.0.txt)
APACHE_2_SHA256 = "cfc7749b96f63bd31c3c42b5c471bf756814053e847c10f3eb003417bc523d30"


def test_license_is_the_apache_2_text() -> None:
    text = (ROOT / "LICENSE").read_bytes()
    assert hashlib.sha256(text).hexdigest() == APACHE_2_SHA256
    assert tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["license"] == "Apache-2.0"   # an SPDX expression
    for component in ("agent", "scheduler"):
        dockerfile = (ROOT / f"Dockerfile.{component}").read_text()
        assert 'org.opencontainers.image.licenses="Apache-2.0"' in dockerfile
        assert re.search(r"^COPY .*\bLICENSE\b.* /src/$", dockerfile, re.M)


def test_install_builds_and_pushes_the_images_the_manifests_name() -> None:
    install = (ROOT / "docs" / "install.md").read_text()
    (kustomization,) = yaml.safe_load_all((DEPLOY / "base" / "kustomization.yaml").read_text())
    for entry in kustomization["images"]:
        name = entry["name"]
        component = name.rsplit("loadwise-", 1)[1]
        assert (ROOT / f"Dockerfile.{component}").is_file()
        assert f"kustomize edit set image {name}=$REGISTRY/loadwise-{component}:$VERSION" in install
    assert "docker build -f Dockerfile.$c -t $REGISTRY/loadwise-$c:$VERSION" in install
    assert "docker push $REGISTRY/loadwise-$c:$VERSION" in install
