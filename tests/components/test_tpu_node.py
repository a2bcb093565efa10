"""TpuVllmNode under Pulumi mocks: identity and grants, the API-key secret, the network edge, the request,
and a startup script rendered from an image reference that is an output (the stack's mirror)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pulumi
import pulumi_gcp as gcp
import pytest
from pulumi.runtime import mocks as pulumi_mocks

from components.serving_identity import ServingIdentity, ServingIdentityArgs
from components.tpu.node import (
    IAP_SOURCE_RANGE,
    NetworkEdge,
    NodeWeights,
    QueueTerms,
    TpuVllmNode,
    TpuVllmNodeArgs,
)
from components.tpu.request_body import FlexStart, Spot
from preview.capture import Capture, OfflineMocks, RecordingMonitor, run_registrations
from preview.render import clean, plan_document
from serving.route_guard import GuardConfig, guard_args, launcher_command

Register = Callable[[Callable[[], object]], Capture]
QUEUED = "pulumi-python:dynamic/tpu:QueuedResource"
FIREWALL = "gcp:compute/firewall:Firewall"
SERVE_ARGS = ["/mnt/models/gemma-4-12B-it", "--served-model-name", "gemma", "--port", "8000", *guard_args()]
LAUNCHER = launcher_command(GuardConfig(names=("gemma",), key="required"))


EDGE_FIELDS = {"public_endpoint", "allowed_source_ranges", "iap_ssh", "egress_nat", "network", "subnetwork"}
QUEUE_FIELDS = {"provisioning", "valid_until_seconds", "active_deadline_seconds", "fallbacks"}


def identity(account_id: str = "gemma-tpu-node") -> ServingIdentity:
    return ServingIdentity("gemma-tpu-identity", ServingIdentityArgs(account_id=account_id, display_name="TPU node"))


def node_args(**changes: object) -> TpuVllmNodeArgs:
    """The node's Args with `changes`; network-edge and queue fields may be given flat, for brevity."""
    edge = {key: changes.pop(key) for key in list(changes) if key in EDGE_FIELDS}
    queue: dict[str, object] = {"provisioning": FlexStart(4 * 3600)}
    queue.update({key: changes.pop(key) for key in list(changes) if key in QUEUE_FIELDS})
    values: dict[str, object] = {
        "project": "test-project",
        "zone": "us-east5-a",
        "queue": QueueTerms(**queue),  # type: ignore[arg-type]
        "image": "vllm/vllm-tpu:v0.32.0",
        "serve_args": SERVE_ARGS,
        "serving_command": LAUNCHER,
        "weights": NodeWeights(bucket_name="test-project-gemma-models", dirs=["gemma-4-12B-it"]),
        "edge": NetworkEdge(**edge),  # type: ignore[arg-type]
        "labels": {"stack": "tpu-v6e"},
    }
    values.update(changes)
    if "identity" not in values:
        values["identity"] = identity()
    return TpuVllmNodeArgs(**values)  # type: ignore[arg-type]


def body_of(capture: Capture) -> dict[str, Any]:
    return dict(clean(capture.one(QUEUED).inputs)["requestBody"])


def script_of(capture: Capture) -> str:
    return str(body_of(capture)["tpu"]["nodeSpec"][0]["node"]["metadata"]["startup-script"])


def test_internal_only_by_default(register: Register) -> None:
    """No external IP, no vLLM-port rule, SSH only from IAP, and NAT so the node can still pull the image."""
    capture = register(lambda: TpuVllmNode("gemma-tpu", node_args()))
    node = body_of(capture)["tpu"]["nodeSpec"][0]["node"]
    assert node["networkConfig"]["enableExternalIps"] is False
    (rule,) = capture.of_type(FIREWALL)
    assert rule.inputs["sourceRanges"] == [IAP_SOURCE_RANGE]
    assert rule.inputs["allows"] == [{"protocol": "tcp", "ports": ["22"]}]
    assert rule.inputs["targetTags"] == node["tags"]
    nat = capture.one("gcp:compute/routerNat:RouterNat")
    assert nat.inputs["region"] == "us-east5"


def test_public_endpoint_opens_the_port_to_named_ranges_only(register: Register) -> None:
    """A public node gets an external IP and a rule for the vLLM port from exactly the configured ranges."""
    ranges = ["203.0.113.0/24", "2001:db8::/32"]
    capture = register(
        lambda: TpuVllmNode("gemma-tpu", node_args(public_endpoint=True, allowed_source_ranges=ranges, iap_ssh=False))
    )
    assert body_of(capture)["tpu"]["nodeSpec"][0]["node"]["networkConfig"]["enableExternalIps"] is True
    (rule,) = capture.of_type(FIREWALL)
    assert rule.inputs["sourceRanges"] == ranges
    assert rule.inputs["allows"] == [{"protocol": "tcp", "ports": ["8000"]}]
    assert rule.inputs["direction"] == "INGRESS"
    assert capture.of_type("gcp:compute/routerNat:RouterNat") == []


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"public_endpoint": True}, "edge.allowed_source_ranges is required when edge.public_endpoint is true"),
        ({"allowed_source_ranges": ["0.0.0.0/0"]}, "opens the vLLM port to the whole internet"),
        ({"allowed_source_ranges": ["::/0"]}, "opens the vLLM port to the whole internet"),
        ({"allowed_source_ranges": ["10.0.0.1/8"]}, "is not a CIDR"),
        ({"tensor_parallel_size": 4}, "does not fit v6e-1"),
        ({"accelerator_type": "v5e-4"}, "expected one of v6e-1, v6e-4, v6e-8"),
    ],
)
def test_unsafe_or_unworkable_nodes_are_refused(changes: dict[str, object], message: str) -> None:
    """An open firewall or a slice that cannot hold the tensor-parallel size never reaches a plan."""
    with pytest.raises(ValueError, match=message):
        TpuVllmNode("gemma-tpu", node_args(**changes))


def test_identity_reads_only_its_own_secrets(register: Register) -> None:
    """The node's account may read its API key (and an HF token if named) and write logs; the bucket's
    reader grant belongs to the bucket (ModelBucket readers), so the node makes none of its own."""
    capture = register(lambda: TpuVllmNode("gemma-tpu", node_args(hf_token_secret="hf-token")))
    account = capture.one("gcp:serviceaccount/account:Account")
    email = f"{account.inputs['accountId']}@test-project.iam.gserviceaccount.com"
    member = f"serviceAccount:{email}"
    assert capture.of_type("gcp:storage/bucketIAMMember:BucketIAMMember") == []
    secret_readers = capture.of_type("gcp:secretmanager/secretIamMember:SecretIamMember")
    assert sorted(r.inputs["secretId"] for r in secret_readers) == ["gemma-tpu-api-key", "hf-token"]
    assert {r.inputs["role"] for r in secret_readers} == {"roles/secretmanager.secretAccessor"}
    assert {r.inputs["member"] for r in secret_readers} == {member}
    (log_writer,) = capture.of_type("gcp:projects/iAMMember:IAMMember")
    assert log_writer.inputs["role"] == "roles/logging.logWriter"
    node = body_of(capture)["tpu"]["nodeSpec"][0]["node"]
    assert node["serviceAccount"]["email"] == email
    assert "HF_TOKEN_SECRET=hf-token" in script_of(capture)


def test_request_carries_the_provisioning_terms(register: Register) -> None:
    """Flex-start with its max run duration, or spot: the tier reaches the REST body unchanged."""
    flex = register(lambda: TpuVllmNode("gemma-tpu", node_args(valid_until_seconds=3600)))
    body = body_of(flex)
    assert body["provisioningModel"] == "FLEX_START"
    assert body["runDuration"] == {"maxRunDuration": "14400s"}
    assert body["queueingPolicy"] == {"validUntilDuration": "3600s"}
    assert body["tpu"]["nodeSpec"][0]["node"]["acceleratorType"] == "v6e-1"
    assert body["tpu"]["nodeSpec"][0]["node"]["runtimeVersion"] == "v2-alpha-tpuv6e"


def test_spot_request(register: Register) -> None:
    """A spot node asks for the spot tier, without flex-start's run duration (which bounds flex-start only)."""
    capture = register(lambda: TpuVllmNode("gemma-tpu", node_args(provisioning=Spot())))
    body = body_of(capture)
    assert body["spot"] == {}
    assert "runDuration" not in body


def test_startup_script_states_tensor_parallel_and_names_the_secret(register: Register) -> None:
    """One chip, tensor parallel 1, stated explicitly; the script names the secret, never its value; the
    bucket (named by Google at creation) reaches the VM as metadata beside the script."""
    capture = register(lambda: TpuVllmNode("gemma-tpu", node_args()))
    script = script_of(capture)
    assert "--tensor-parallel-size 1" in script
    assert "API_KEY_SECRET=gemma-tpu-api-key" in script
    metadata = body_of(capture)["tpu"]["nodeSpec"][0]["node"]["metadata"]
    assert metadata["gemma-model-bucket"] == "test-project-gemma-models"


class CanaryMocks(OfflineMocks):
    """Mocks that give the random API key a recognisable value, to prove it never appears in the plan."""

    CANARY = "CANARY-api-key-value-0123456789abcdef"

    def new_resource(self, args: pulumi_mocks.MockResourceArgs) -> tuple[str | None, dict[str, Any]]:
        resource_id, state = super().new_resource(args)
        if args.typ == "random:index/randomPassword:RandomPassword":
            state["result"] = self.CANARY
        return resource_id, state


def test_api_key_value_never_appears_in_the_plan() -> None:
    """The key is generated, kept secret end to end, and masked wherever the plan could show it."""
    capture = Capture()
    mocks = CanaryMocks(project="test-project")
    pulumi_mocks.set_mocks(
        mocks, project="gemma-serving", stack="test", preview=True, monitor=RecordingMonitor(mocks, capture)
    )

    def program() -> None:
        node = TpuVllmNode("gemma-tpu", node_args())
        pulumi.export("apiKeySecret", node.api_key_secret)

    run_registrations(program, capture)
    version = capture.one("gcp:secretmanager/secretVersion:SecretVersion")
    assert clean(version.inputs)["secretData"] == "[secret]"
    document = json.dumps(plan_document(capture, stack="test", project="gemma-serving", notes=[]))
    assert CanaryMocks.CANARY not in document
    assert capture.outputs["apiKeySecret"] == "projects/test-project/secrets/gemma-tpu-api-key"


def test_api_key_stays_in_the_nodes_region(register: Register) -> None:
    """The key is a ManagedSecret, replicated in the node's region only, like the stack's other secrets
    (before, the node kept it with automatic, worldwide replication: data residency differed by platform)."""
    capture = register(lambda: TpuVllmNode("gemma-tpu", node_args()))
    secret = capture.one("gcp:secretmanager/secret:Secret")
    assert secret.inputs["secretId"] == "gemma-tpu-api-key"
    assert secret.inputs["replication"] == {"userManaged": {"replicas": [{"location": "us-east5"}]}}
    assert capture.one("gemma:secrets:ManagedSecret").name == "gemma-tpu-api-key"


MIRROR_IMAGE = "us-east5-docker.pkg.dev/test-project/gemma-tpu-dockerhub/vllm/vllm-tpu:v0.32.0"


def mirrored_image() -> pulumi.Output[str]:
    """An image reference that is an output of another resource, as the stack's mirror gives it."""
    repository = gcp.artifactregistry.Repository(
        "mirror-repo", project="test-project", location="us-east5", repository_id="gemma-tpu-dockerhub", format="DOCKER"
    )
    host = "us-east5-docker.pkg.dev/test-project"
    return repository.repository_id.apply(lambda repo: f"{host}/{repo}/vllm/vllm-tpu:v0.32.0")


def test_script_is_rendered_from_an_image_output(register: Register) -> None:
    """An image reference known only as an output still reaches the script whole, with docker logged in
    to its registry host; the stand-in used for early validation never does."""
    capture = register(lambda: TpuVllmNode("gemma-tpu", node_args(image=mirrored_image())))
    script = script_of(capture)
    assert f"IMAGE={MIRROR_IMAGE}" in script
    assert "REGISTRY_HOST=us-east5-docker.pkg.dev" in script
    assert "unresolved.invalid" not in script


def test_bad_arguments_fail_at_construction_even_with_an_image_output() -> None:
    """Rendering waits for the image, but a script that would serve nothing is refused before that."""
    image = pulumi.Output.from_input(MIRROR_IMAGE)
    with pytest.raises(ValueError, match="is not under /mnt/models"):
        TpuVllmNode("gemma-tpu", node_args(image=image, serve_args=["/elsewhere/model", "--port", "8000"]))


def test_given_identity_is_used_and_the_request_waits_for_it(register: Register) -> None:
    """The node runs as the ServingIdentity made before it (so the mirror and the bucket can grant it
    first), makes no account of its own, and its request waits for the identity and for wait_for."""

    def build() -> None:
        weights = gcp.storage.BucketObject("weights-marker", bucket="test-project-gemma-models", content="done")
        TpuVllmNode("gemma-tpu", node_args(wait_for=[weights]))

    capture = register(build)
    (account,) = capture.of_type("gcp:serviceaccount/account:Account")
    assert account.parent is not None
    assert account.parent.endswith("ServingIdentity::gemma-tpu-identity")
    member = "serviceAccount:gemma-tpu-node@test-project.iam.gserviceaccount.com"
    readers = capture.of_type("gcp:secretmanager/secretIamMember:SecretIamMember")
    assert {reader.inputs["member"] for reader in readers} == {member}
    assert body_of(capture)["tpu"]["nodeSpec"][0]["node"]["serviceAccount"]["email"] == member.split(":", 1)[1]
    queued = capture.one(QUEUED)
    marker = capture.one("gcp:storage/bucketObject:BucketObject")
    assert {account.urn, marker.urn} <= set(queued.dependencies)
