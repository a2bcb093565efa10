"""The Kubernetes manifests of a rendered stack, as the API server would receive them, and their validation.

Why a helper: the capture holds the engine's wire form (numbers as floats, secrets wrapped, values only
Google knows as unknowns); the API server sees integers and plain strings. Unknowns become a placeholder
string, which is what they are at apply time (a bucket name, a secret version).
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import yaml

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
    some 80 ms of CPU, and each manifest validated parsed them again.
    """
    found: dict[tuple[str, str], dict[str, Any]] = {}
    for path in sorted(CRDS.glob("*.yaml")):
        for document in yaml.safe_load_all(path.read_text(encoding="utf-8")):
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
    """Raise when `manifest` does not match its kind's schema (built-in: the pinned version's; CRD: its own)."""
    key = (manifest["apiVersion"], manifest["kind"])
    schemas = crd_schemas()
    if key in schemas:
        jsonschema.validate(manifest, schemas[key])
        return
    kubernetes_validate.validate(manifest, kubernetes_version, strict=True)
