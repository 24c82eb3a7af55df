"""A CustomResourceDefinition's ``openAPIV3Schema`` as the one validation of the documents users write.

The API server checks a custom resource against its CRD; a file read by the agent or ``loadwise qos-plan``
never meets the API server, so it is checked here against the same schema (``common/crds/`` links to the
manifests under ``deploy/crds``), through jsonschema.  The first problem becomes a :class:`ConfigError` whose
``field`` is the path inside the object (``spec.podQOS[0].scopeSelector.matchExpressions[0].scopeName``).

OpenAPI is not quite JSON Schema: ``nullable``, ``x-kubernetes-int-or-string`` and the structural rule that an
object admits only its declared properties (unknown fields are refused, as ``kubectl apply`` does with strict
field validation) are translated by :func:`closed`.

Another schema may refer to a CRD's instead of copying it: ``$ref: "crd:<file>#/<pointer>"`` resolves, through
:data:`REGISTRY`, to the translated ``openAPIV3Schema`` of ``common/crds/<file>`` (the agent config file's
``metricCollectPolicy`` is the NodeMetric CRD's ``spec.metricCollectPolicy``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from functools import cache
from importlib import resources
from typing import Any

import jsonschema
import yaml
from referencing import Registry, Resource
from referencing.exceptions import NoSuchResource
from referencing.jsonschema import DRAFT202012

from common.config import ConfigError

__all__ = ["CRD_URI", "REGISTRY", "closed", "crd_schema", "field_path", "raise_first", "validate"]

CRD_URI = "crd:"


def closed(schema: Any) -> Any:
    """OpenAPI (structural) -> JSON Schema where an object without a declared catch-all admits no other key."""
    if isinstance(schema, list):
        return [closed(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: closed(v) for k, v in schema.items() if not k.startswith("x-kubernetes-") and k != "nullable"}
    if schema.get("nullable") and "type" in out:
        out["type"] = [out["type"], "null"]
    if schema.get("x-kubernetes-int-or-string"):
        out.pop("type", None)
    if (
        "properties" in schema
        and "additionalProperties" not in schema
        and not schema.get("x-kubernetes-preserve-unknown-fields")
    ):
        out["additionalProperties"] = False
    return out


@cache
def crd_schema(filename: str) -> dict[str, Any]:
    """The (single) served version's openAPIV3Schema of the CRD shipped as ``common/crds/<filename>``."""
    text = resources.files("common").joinpath("crds", filename).read_text(encoding="utf-8")
    (crd,) = [d for d in yaml.safe_load_all(text) if d is not None]
    (version,) = crd["spec"]["versions"]
    return dict(version["schema"]["openAPIV3Schema"])


@cache
def _crd_resource(uri: str) -> Resource[Any]:
    """``crd:<file>``: the CRD's translated ``openAPIV3Schema``, for a ``$ref`` from another schema."""
    if not uri.startswith(CRD_URI):
        raise NoSuchResource(uri)  # type: ignore[call-arg]  # attrs fields, which mypy does not see
    return Resource.from_contents(closed(crd_schema(uri.removeprefix(CRD_URI))), default_specification=DRAFT202012)


REGISTRY: Registry[Any] = Registry(retrieve=_crd_resource)  # type: ignore[call-arg]  # an attrs alias


@cache
def _validator(filename: str, part: tuple[str, ...] = ()) -> jsonschema.Draft202012Validator:
    """A validator for the CRD's schema, or for the property at ``part`` (``("spec",)``: the spec alone)."""
    schema: Any = crd_schema(filename)
    for name in part:
        schema = schema["properties"][name]
    checked = closed(schema)
    jsonschema.Draft202012Validator.check_schema(checked)
    return jsonschema.Draft202012Validator(checked)


def field_path(parts: Iterable[str | int]) -> str:
    """``("spec", "rules", 0, "name")`` -> ``spec.rules[0].name``."""
    out = ""
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out


def _describe(error: jsonschema.ValidationError) -> tuple[str, str]:
    """The field an error is about and a one-line reason; an unknown key is named itself, not its parent."""
    path = list(error.absolute_path)
    if error.validator == "additionalProperties" and isinstance(error.instance, Mapping):
        declared = error.schema.get("properties", {})
        extra = sorted(str(k) for k in error.instance if k not in declared)
        if extra:
            known = ", ".join(sorted(declared))
            return field_path([*path, extra[0]]), f"unknown field (known: {known})"
    if error.validator == "required":
        missing = str(error.message).split("'")[1] if "'" in error.message else ""
        return field_path([*path, missing] if missing else path), "required"
    return field_path(path), error.message


def raise_first(validator: jsonschema.protocols.Validator, obj: Any, prefix: str = "", source: str = "") -> None:
    """Raise a ConfigError naming the field (after ``prefix``) of the most relevant place ``obj`` breaks the
    validator's schema; nothing when it conforms."""
    error = jsonschema.exceptions.best_match(validator.iter_errors(obj))
    if error is not None:
        where, message = _describe(error)
        raise ConfigError(message, field=f"{prefix}.{where}" if prefix and where else prefix or where, source=source)


def validate(obj: Any, filename: str, part: tuple[str, ...] = ()) -> None:
    """Raise a ConfigError naming the field of the first place ``obj`` breaks the CRD's schema (or the part of it
    at ``part``, the field then named from there: ``spec.metricCollectPolicy...``)."""
    raise_first(_validator(filename, part), obj, ".".join(part))
