"""The Kubernetes manifests of a rendered stack, as the API server would receive them, and their validation.

Why a helper: the capture holds the engine's wire form (numbers as floats, secrets wrapped, values only
Google knows as unknowns); the API server sees integers and plain strings. Unknowns become a placeholder
string, which is what they are at apply time (a bucket name, a secret version).
"""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import kubernetes_validate.utils as k8s_utils
import yaml
from referencing import Registry, Resource

from policy.props import is_unknown, unwrap
from preview.capture import UNKNOWN, Capture

CRDS = Path(__file__).resolve().parent / "crds"
PLACEHOLDER = "known-at-apply-time"


def wire_to_manifest(value: Any) -> Any:
    value = unwrap(value)
    if isinstance(value, dict):
        return {key: wire_to_manifest(item) for key, item in value.items()}
    if isinstance(value, list):
        return [wire_to_manifest(item) for item in value]
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if is_unknown(value) or value == UNKNOWN:
        return PLACEHOLDER
    return value


def kubernetes_manifests(capture: Capture) -> list[dict[str, Any]]:
    """Every Kubernetes object the program registers (providers excluded)."""
    return [
        wire_to_manifest(resource.inputs) for resource in capture.resources if resource.type.startswith("kubernetes:")
    ]


@functools.cache
def crd_schemas() -> dict[tuple[str, str], dict[str, Any]]:
    """(apiVersion, kind) -> the openAPIV3Schema of each served version of each copied CRD.

    Read once per process (the files are fixtures; validation only reads the schemas): parsing them took
    some 80 ms of CPU, and each manifest validated parsed them again. libyaml's safe loader reads the
    550 kB of CRDs in 50 ms where the pure-Python one took 0.8 s (the same documents: a safe load either way).
    """
    found: dict[tuple[str, str], dict[str, Any]] = {}
    for path in sorted(CRDS.glob("*.yaml")):
        for document in yaml.load_all(path.read_text(encoding="utf-8"), Loader=yaml.CSafeLoader):
            spec = document["spec"]
            for version in spec["versions"]:
                if version.get("served"):
                    key = (f"{spec['group']}/{version['name']}", spec["names"]["kind"])
                    found[key] = _strict(version["schema"]["openAPIV3Schema"])
    return found


def _strict(schema: Any) -> Any:
    """The schema with unknown fields refused: the API server would prune them silently (a typo'd field
    would vanish on apply), so the test treats them as errors, as `kubectl apply --validate=strict` does."""
    if not isinstance(schema, dict):
        return schema
    strict = {
        key: _strict(value) if key in {"items", "additionalProperties"} else value for key, value in schema.items()
    }
    if "properties" in schema:
        strict["properties"] = {name: _strict(value) for name, value in schema["properties"].items()}
        if "additionalProperties" not in schema and not schema.get("x-kubernetes-preserve-unknown-fields"):
            strict["additionalProperties"] = False
    return strict


def validate(manifest: dict[str, Any], kubernetes_version: str) -> None:
    """Raise when `manifest` does not match its kind's schema (built-in: the pinned version's; CRD: its own).

    The errors are the libraries' own: `jsonschema.ValidationError` (its best match, as `jsonschema.validate`
    raises it) for a custom resource, `kubernetes_validate.ValidationError` for a built-in kind.
    """
    key = (manifest["apiVersion"], manifest["kind"])
    if key in crd_schemas():
        error = jsonschema.exceptions.best_match(_crd_validator(key).iter_errors(manifest))
        if error is not None:
            raise error
        return
    validator, version = _builtin_validator(manifest["apiVersion"], manifest["kind"], kubernetes_version)
    try:
        validator.validate(manifest)
    except jsonschema.ValidationError as error:
        raise kubernetes_validate.ValidationError(error, version=version) from error


@functools.cache
def _crd_validator(key: tuple[str, str]) -> jsonschema.protocols.Validator:
    """One checked validator per custom kind: `jsonschema.validate` checked the schema itself against the
    meta-schema on every call (some 50 ms of CPU a manifest for PodMonitoring and the Gateway API kinds)."""
    schema = crd_schemas()[key]
    validator_class = jsonschema.validators.validator_for(schema)
    validator_class.check_schema(schema)
    return validator_class(schema)


@functools.cache
def _builtin_validator(
    api_version: str, kind: str, kubernetes_version: str
) -> tuple[jsonschema.Draft202012Validator, str]:
    """`kubernetes_validate.validate(manifest, version, strict=True)`'s validator, built once per kind and version.

    The library reads and parses its 1.5 MB `_definitions.json` and resolves the references anew on each
    call (about 10 ms of CPU a manifest, some three hundred manifests a run); this is its own lookup
    (kubernetes_validate/utils.py, 1.37.0) with the schema, the definitions and the resolved references kept.
    """
    desired = kubernetes_version.removeprefix("v")
    if k8s_utils.major_minor(desired) > k8s_utils.latest_version():
        raise kubernetes_validate.VersionNotSupportedError(version=k8s_utils.major_minor(desired))
    version = [v for v in k8s_utils.all_versions() if k8s_utils.major_minor(v) <= k8s_utils.major_minor(desired)][-1]
    schema_dir = f"v{version}-local-strict"
    group_version = re.sub(r"^([^./]*)(?:\.[^/]*)?/", r"\1-", api_version)
    try:
        schema = k8s_utils.schema_contents(
            f"kubernetes-json-schema/{schema_dir}/{kind.lower()}-{group_version}.json", desired
        )
    except FileNotFoundError:
        raise kubernetes_validate.SchemaNotFoundError(
            version=k8s_utils.major_minor(desired), kind=kind, api_version=api_version
        ) from None
    definitions = k8s_utils.schema_contents(f"kubernetes-json-schema/{schema_dir}/_definitions.json", desired)
    registry = Resource.from_contents(definitions) @ (Resource.from_contents(schema) @ Registry())
    return jsonschema.Draft202012Validator(schema, registry=registry), k8s_utils.major_minor(version)
