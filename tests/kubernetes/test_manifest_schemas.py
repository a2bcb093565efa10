"""Every Kubernetes object of the GKE stacks validates against the schema the cluster will judge it by.

A manifest the API server refuses fails `pulumi up` halfway through a rollout (the node pool bills while the
Deployment is rejected); a field the server prunes (a CRD typo) is worse: it vanishes without an error.
Built-in kinds are checked against the OpenAPI schema of the Kubernetes version each stack pins
(`kubernetes-validate`, strict: unknown fields are errors), custom resources against their CRDs' published
schemas (tests/kubernetes/crds/SOURCE.md).
"""

from __future__ import annotations

import copy

import jsonschema
import kubernetes_validate
import pytest

from preview.stack_file import available_stacks
from serving.gke_machines import SUPPORTED_KUBERNETES_VERSIONS
from stacks.loading import settings_from_config
from stacks.settings import GkeStack
from tests.conftest import ROOT, render_stack, stack_config
from tests.kubernetes.manifests import crd_schemas, kubernetes_manifests, validate

GKE_STACKS = [stack for stack in available_stacks(ROOT) if stack.startswith("gke-")]
KINDS = {
    "Namespace",
    "ServiceAccount",
    "SecretProviderClass",
    "Deployment",
    "Service",
    "PodMonitoring",
    "HorizontalPodAutoscaler",
    "PodDisruptionBudget",
    "NetworkPolicy",
}


def _pinned_version(stack: str) -> str:
    settings = settings_from_config(stack_config(stack).values)
    assert isinstance(settings, GkeStack)
    return settings.gke.cluster.kubernetes_version


def test_there_are_gke_stacks_to_check() -> None:
    """The checks below must never pass by judging nothing."""
    assert set(GKE_STACKS) >= {"gke-tpu-v6e", "gke-l4x4"}


@pytest.mark.parametrize("stack", GKE_STACKS)
def test_every_manifest_validates_against_the_pinned_schema(stack: str) -> None:
    """`pulumi up` must not be refused by the API server (or have a field pruned) for any object."""
    version = _pinned_version(stack)
    manifests = kubernetes_manifests(render_stack(stack))
    assert {manifest["kind"] for manifest in manifests} >= KINDS
    for manifest in manifests:
        validate(manifest, version)


def test_the_inference_pool_validates_when_a_stack_asks_for_one() -> None:
    """The optional InferencePool must be as valid as the rest when a stack turns it on."""
    capture = render_stack("gke-tpu-v6e", {"gemma-serving:gke": _with_inference_pool("gke-tpu-v6e")})
    pools = [m for m in kubernetes_manifests(capture) if m["kind"] == "InferencePool"]
    assert len(pools) == 1
    validate(pools[0], "1.34")


def _with_inference_pool(stack: str) -> str:
    import json

    block = json.loads(stack_config(stack).values["gemma-serving:gke"])
    block["service"] = {**block.get("service", {}), "inferencePool": True}
    return json.dumps(block)


@pytest.mark.parametrize("version", SUPPORTED_KUBERNETES_VERSIONS)
def test_every_version_a_stack_may_pin_has_a_schema(version: str) -> None:
    """A stack may only pin a version the tests can validate against."""
    manifests = kubernetes_manifests(render_stack("gke-l4x4"))
    deployment = next(m for m in manifests if m["kind"] == "Deployment")
    validate(deployment, version)


def test_a_wrong_field_is_caught_in_a_built_in_kind() -> None:
    """The validation is real: a misspelt probe field is refused (strict schema)."""
    manifests = kubernetes_manifests(render_stack("gke-l4x4"))
    deployment = copy.deepcopy(next(m for m in manifests if m["kind"] == "Deployment"))
    deployment["spec"]["template"]["spec"]["containers"][0]["startupProbe"]["periodSecond"] = 10
    with pytest.raises(kubernetes_validate.ValidationError):
        validate(deployment, "1.34")


def test_a_wrong_field_is_caught_in_a_custom_resource() -> None:
    """The CRD check is real: an unknown field and a wrong type are both refused, not pruned."""
    manifests = kubernetes_manifests(render_stack("gke-l4x4"))
    monitoring = next(m for m in manifests if m["kind"] == "PodMonitoring")
    typo = copy.deepcopy(monitoring)
    typo["spec"]["endpoints"][0]["intervall"] = "15s"
    with pytest.raises(jsonschema.ValidationError):
        validate(typo, "1.34")
    wrong = copy.deepcopy(monitoring)
    wrong["spec"]["endpoints"] = "http"
    with pytest.raises(jsonschema.ValidationError):
        validate(wrong, "1.34")


def test_the_copied_crds_are_the_kinds_the_program_makes() -> None:
    """Each custom resource kind the program registers has its published schema in the repository."""
    assert set(crd_schemas()) >= {
        ("monitoring.googleapis.com/v1", "PodMonitoring"),
        ("inference.networking.k8s.io/v1", "InferencePool"),
        ("secrets-store.csi.x-k8s.io/v1", "SecretProviderClass"),
    }
