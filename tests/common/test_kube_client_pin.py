"""The kube backend's pin on the kubernetes client: the two ``ApiClient`` calls it makes keep their shape.

``common/cluster/kube.py`` builds every request with ``ApiClient.param_serialize`` and sends it with
``ApiClient.call_api`` (one code path for core kinds and custom resources).  Those are the generated client's
plumbing rather than its typed API, and their signatures changed in kubernetes 36; these tests fail when they move
again, and when the installed client falls outside the range pyproject.toml declares.  The wire tests
(``test_kube_wire.py``) exercise the same calls against the kmock emulator.
"""

from __future__ import annotations

import inspect
import re
import tomllib
from pathlib import Path

import kubernetes
from kubernetes.client import ApiClient, Configuration

ROOT = Path(__file__).resolve().parents[2]


def _client() -> ApiClient:
    cfg = Configuration(host="https://apiserver:6443", api_key={"BearerToken": "t0ken"},
                        api_key_prefix={"BearerToken": "Bearer"})  # as kubernetes.config sets it
    return ApiClient(cfg)


def test_param_serialize_builds_url_query_and_auth() -> None:
    inspect.signature(ApiClient.param_serialize).bind(
        None, method="GET", resource_path="/p", query_params=[], header_params={}, body=None, auth_settings=[])
    parts = _client().param_serialize(
        method="PATCH", resource_path="/api/v1/namespaces/ns/pods/p", query_params=[("limit", "5")],
        header_params={"Accept": "application/json", "Content-Type": "application/merge-patch+json"},
        body={"metadata": {"labels": {"a": "b"}}}, auth_settings=["BearerToken"])
    assert len(parts) == 5
    method, url, headers, body, _ = parts
    assert method == "PATCH"
    assert url == "https://apiserver:6443/api/v1/namespaces/ns/pods/p?limit=5"
    assert {k.lower(): v for k, v in headers.items()}["authorization"] == "Bearer t0ken"
    assert headers["Content-Type"] == "application/merge-patch+json"
    assert body == {"metadata": {"labels": {"a": "b"}}}


def test_call_api_takes_the_arguments_kube_py_passes() -> None:
    params = inspect.signature(ApiClient.call_api).parameters
    inspect.signature(ApiClient.call_api).bind(None, "GET", "https://h/p", header_params={}, body=None,
                                               _request_timeout=(10.0, None))
    assert list(params)[1:3] == ["method", "url"]


def test_installed_client_is_inside_the_declared_range() -> None:
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    spec = next(d for d in deps if re.match(r"kubernetes\b", d))
    low, high = (int(x) for x in re.fullmatch(r"kubernetes>=(\d+),<(\d+)", spec).groups())  # type: ignore[union-attr]
    assert low <= int(kubernetes.__version__.split(".")[0]) < high
