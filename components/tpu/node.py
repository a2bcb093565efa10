"""`TpuVllmNode`: vLLM on one TPU v6e node, with its identity, secrets and network edge.

Owns: a dedicated service account (unless one is given, see `NodeIdentity`); its read binding on the
model bucket; the vLLM API key (a random
value stored as a Secret Manager secret, readable only by that account); a log-writer binding so the
container's output reaches Cloud Logging; firewall rules (the vLLM port only from named source ranges,
SSH only from Google's IAP range); Cloud NAT when the node is internal-only (so it can pull the image);
and the TPU queued resource whose startup script runs vLLM.
Does not own: the model bucket or the weights in it, nor the image repository it pulls from (the stack
grants the node's identity `artifactregistry.reader` on its Docker Hub mirror: supply.image_supply).

Secure defaults: internal IP only, no rule open to 0.0.0.0/0 or ::/0 (refused here and in the settings),
the key never in plain text in metadata, the plan or a command line.
"""

from __future__ import annotations

import hashlib
import ipaddress
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

import pulumi
import pulumi_gcp as gcp
import pulumi_random as random

from components.gcp_names import SERVICE_ACCOUNT_ID
from components.tpu import compute
from components.tpu.queued_resource import QueuedResource, QueuedResourceArgs
from components.tpu.request_body import Provisioning
from components.tpu.startup_script import BUCKET_METADATA_KEY, StartupScriptSpec, render_startup_script
from policy.credentials import credential_kind
from policy.source_ranges import allowed_text, describe, too_wide

# Stands in for an image reference that is still a Pulumi output while the script's other values are
# validated at construction; the script itself is rendered from the resolved reference.
_UNRESOLVED_IMAGE = "unresolved.invalid/image:pending"

# Source of IAP TCP forwarding (SSH tunnels): https://cloud.google.com/iap/docs/using-tcp-forwarding
IAP_SOURCE_RANGE = "35.235.240.0/20"
_V6E_TYPE = re.compile(r"^v6e-(\d+)$")


@dataclass(frozen=True)
class NodeIdentity:
    """A service account made outside the node, so that others can grant it before the node exists.

    Why: the stack's image mirror must grant the node's account `artifactregistry.reader`, and the node's
    image reference comes from that mirror; an account made inside the node would exist only after both.
    """

    # The account id (6-30 characters), so the request body shows the email before the account exists.
    account_id: str
    # `serviceAccount:<email>`, an output of the account (bindings on it wait for the account).
    member: pulumi.Input[str]
    # What the request must wait for: the account (or the component that owns it).
    resource: pulumi.Resource


@dataclass(frozen=True)
class TpuVllmNodeArgs:
    """Inputs of one TPU vLLM node. Defaults are the secure choice."""

    project: str
    zone: str
    provisioning: Provisioning
    # The pinned image; an output when it comes through the stack's Artifact Registry mirror.
    image: pulumi.Input[str]
    # The full `vllm serve` arguments (model path under model_root first), from the stack's vLLM settings.
    serve_args: Sequence[str]
    model_bucket: pulumi.Input[str]
    # Checkpoint directories in the bucket the VM needs (the model, and a drafter if any).
    model_dirs: Sequence[str]
    accelerator_type: str = "v6e-1"
    runtime_version: str = "v2-alpha-tpuv6e"
    tensor_parallel_size: int = 1
    port: int = 8000
    model_root: str = "/mnt/models"
    network: str = "default"
    subnetwork: str | None = None
    public_endpoint: bool = False
    allowed_source_ranges: Sequence[str] = ()
    iap_ssh: bool = True
    egress_nat: bool = True
    hf_token_secret: str | None = None
    env: Mapping[str, str] = field(default_factory=lambda: {"HF_HUB_OFFLINE": "1"})
    labels: Mapping[str, str] = field(default_factory=dict)
    valid_until_seconds: int | None = None
    active_deadline_seconds: int = 2 * 3600
    # None: the node makes its own dedicated account.
    identity: NodeIdentity | None = None
    # What must exist before the VM boots besides the node's own grants: the weight imports (so vLLM never
    # starts against an empty bucket path) and the image mirror with its reader binding.
    wait_for: Sequence[pulumi.Resource] = ()

    def problems(self) -> list[str]:
        """Every reason these inputs would build an unsafe or unworkable node."""
        found: list[str] = []
        match = _V6E_TYPE.match(self.accelerator_type)
        if not match:
            found.append(f"accelerator_type {self.accelerator_type!r}: expected v6e-<chips>, e.g. v6e-1")
        elif not 1 <= self.tensor_parallel_size <= int(match.group(1)):
            found.append(
                f"tensor_parallel_size {self.tensor_parallel_size} does not fit {self.accelerator_type} "
                f"({match.group(1)} chip(s)); for a 12B model use v6e-1 with tensor parallel 1"
            )
        if self.public_endpoint and not self.allowed_source_ranges:
            found.append("allowed_source_ranges is required when public_endpoint is true")
        for cidr in self.allowed_source_ranges:
            found.extend(_range_problems(cidr))
        found += [
            f"allowed_source_ranges together let in {describe(item)}; /metrics and /tokenize need no API key: "
            f"allow {allowed_text()}"
            for item in too_wide(self.allowed_source_ranges)
        ]
        kind = credential_kind(self.hf_token_secret or "")
        if kind:
            found.append(f"hf_token_secret holds {kind}; it names a Secret Manager secret (its id), never the token")
        if "--tensor-parallel-size" in self.serve_args:
            index = list(self.serve_args).index("--tensor-parallel-size")
            given = self.serve_args[index + 1] if index + 1 < len(self.serve_args) else ""
            if given != str(self.tensor_parallel_size):
                found.append(f"serve_args say --tensor-parallel-size {given!r}, the node {self.tensor_parallel_size}")
        if not 1024 <= self.port <= 65535:
            found.append(f"port {self.port}: use 1024-65535")
        if self.identity is not None and not SERVICE_ACCOUNT_ID.match(self.identity.account_id):
            found.append(f"identity.account_id {self.identity.account_id!r}: 6-30 lowercase letters, digits, '-'")
        return found


def _range_problems(cidr: str) -> list[str]:
    try:
        network = ipaddress.ip_network(cidr, strict=True)
    except ValueError as error:
        return [f"allowed source range {cidr!r} is not a CIDR ({error})"]
    if network.prefixlen == 0:
        return [f"allowed source range {cidr!r} opens the vLLM port to the whole internet; name the callers' networks"]
    return []


def service_account_id(name: str) -> str:
    """A valid, stable account id (6-30 chars) derived from the component name."""
    base = re.sub(r"[^a-z0-9-]+", "-", name.lower()).strip("-")
    if not base or not base[0].isalpha():
        base = f"tpu-{base}"
    candidate = base if len(base) >= 6 else f"{base}-vllm"
    if len(candidate) > 30:
        digest = hashlib.sha256(name.encode()).hexdigest()[:6]
        candidate = f"{base[:23].rstrip('-')}-{digest}"
    if not SERVICE_ACCOUNT_ID.match(candidate):
        raise ValueError(f"cannot derive a service account id from {name!r}; got {candidate!r}")
    return candidate


class TpuVllmNode(pulumi.ComponentResource):
    """vLLM on a TPU v6e node obtained through a queued resource; reachable only where allowed."""

    endpoint: pulumi.Output[str]
    queued_resource_name: pulumi.Output[str]
    node_id: pulumi.Output[str]
    api_key_secret: pulumi.Output[str]
    service_account_email: pulumi.Output[str]
    internal_ip: pulumi.Output[str]
    image: pulumi.Output[str]

    def __init__(self, name: str, args: TpuVllmNodeArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        problems = args.problems()
        if problems:
            raise ValueError(f"TpuVllmNode {name}: " + "; ".join(problems))
        secret_id = f"{name}-api-key"
        # Validated before anything registers; the script names the secret, never its value.
        spec = StartupScriptSpec(
            project=args.project,
            image=args.image if isinstance(args.image, str) else _UNRESOLVED_IMAGE,
            serve_args=with_tensor_parallel(args.serve_args, args.tensor_parallel_size),
            model_dirs=list(args.model_dirs),
            api_key_secret=secret_id,
            hf_token_secret=args.hf_token_secret,
            port=args.port,
            model_root=args.model_root,
            env=dict(args.env),
        )
        # Rendered from the resolved image reference (a string in apply; no resource is made there).
        script = pulumi.Output.from_input(args.image).apply(
            lambda image: render_startup_script(replace(spec, image=image))
        )
        super().__init__("gemma:tpu:TpuVllmNode", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        region = args.zone.rsplit("-", 1)[0]
        tag = name

        account: pulumi.Resource
        member: pulumi.Input[str]
        if args.identity is None:
            account_id = service_account_id(name)
            own = gcp.serviceaccount.Account(
                f"{name}-sa",
                account_id=account_id,
                display_name=f"gemma-serving TPU vLLM node {name}",
                project=args.project,
                opts=child,
            )
            account, member = own, own.email.apply(lambda email: f"serviceAccount:{email}")
        else:
            account_id, member, account = args.identity.account_id, args.identity.member, args.identity.resource
        # Known before the account exists, so the plan can show the full queued-resource request.
        email = f"{account_id}@{args.project}.iam.gserviceaccount.com"

        grants: list[pulumi.Resource] = [
            gcp.storage.BucketIAMMember(
                f"{name}-weights-reader",
                bucket=args.model_bucket,
                role="roles/storage.objectViewer",
                member=member,
                opts=child,
            ),
            gcp.projects.IAMMember(
                f"{name}-log-writer",
                project=args.project,
                role="roles/logging.logWriter",
                member=member,
                opts=child,
            ),
        ]

        api_key = random.RandomPassword(f"{name}-api-key", length=48, special=False, opts=child)
        secret = gcp.secretmanager.Secret(
            f"{name}-api-key",
            secret_id=secret_id,
            project=args.project,
            replication=gcp.secretmanager.SecretReplicationArgs(auto=gcp.secretmanager.SecretReplicationAutoArgs()),
            labels=dict(args.labels),
            opts=child,
        )
        version = gcp.secretmanager.SecretVersion(
            f"{name}-api-key", secret=secret.id, secret_data=api_key.result, opts=child
        )
        grants += [
            version,
            gcp.secretmanager.SecretIamMember(
                f"{name}-api-key-reader",
                project=args.project,
                secret_id=secret.secret_id,
                role="roles/secretmanager.secretAccessor",
                member=member,
                opts=child,
            ),
        ]
        if args.hf_token_secret:
            grants.append(
                gcp.secretmanager.SecretIamMember(
                    f"{name}-hf-token-reader",
                    project=args.project,
                    secret_id=args.hf_token_secret.rsplit("/", 1)[-1],
                    role="roles/secretmanager.secretAccessor",
                    member=member,
                    opts=child,
                )
            )
        grants += self._network_edge(name, args, region, tag, child)

        queued = QueuedResource(
            f"{name}-qr",
            QueuedResourceArgs(
                project=args.project,
                zone=args.zone,
                queued_resource_id=name,
                node_id=name,
                accelerator_type=args.accelerator_type,
                runtime_version=args.runtime_version,
                service_account_email=email,
                startup_script=script,
                provisioning=args.provisioning,
                network=args.network,
                subnetwork=args.subnetwork,
                enable_external_ips=args.public_endpoint,
                labels=dict(args.labels),
                metadata={BUCKET_METADATA_KEY: args.model_bucket},
                network_tags=[tag],
                valid_until_seconds=args.valid_until_seconds,
                active_deadline_seconds=args.active_deadline_seconds,
            ),
            # The VM reads the bucket and the secret and pulls the image at first boot: every grant, the
            # weights and the image repository must exist before it.
            opts=pulumi.ResourceOptions(parent=self, depends_on=[account, *grants, *args.wait_for]),
        )

        address = queued.external_ip if args.public_endpoint else queued.internal_ip
        self.endpoint = address.apply(lambda ip: f"http://{ip}:{args.port}")
        self.queued_resource_name = queued.queued_resource_name
        self.node_id = pulumi.Output.from_input(name)
        self.api_key_secret = pulumi.Output.from_input(f"projects/{args.project}/secrets/{secret_id}")
        # From the member output, so whoever uses the email waits for the account.
        self.service_account_email = pulumi.Output.from_input(member).apply(lambda m: m.split(":", 1)[1])
        self.image = pulumi.Output.from_input(args.image)
        self.internal_ip = queued.internal_ip
        self.register_outputs(
            {
                "endpoint": self.endpoint,
                "queuedResourceName": self.queued_resource_name,
                "nodeId": self.node_id,
                "apiKeySecret": self.api_key_secret,
                "serviceAccountEmail": self.service_account_email,
                "internalIp": self.internal_ip,
                "image": self.image,
            }
        )

    @staticmethod
    def _network_edge(
        name: str, args: TpuVllmNodeArgs, region: str, tag: str, child: pulumi.ResourceOptions
    ) -> list[pulumi.Resource]:
        """Firewall rules for exactly the named sources, and NAT for an internal-only node's egress."""
        edge: list[pulumi.Resource] = []
        if args.allowed_source_ranges:
            edge.append(
                compute.Firewall(
                    f"{name}-vllm-port",
                    project=args.project,
                    network=args.network,
                    description=f"vLLM port of TPU node {name}, from named ranges only",
                    tcp_ports=[str(args.port)],
                    source_ranges=list(args.allowed_source_ranges),
                    target_tags=[tag],
                    opts=child,
                )
            )
        if args.iap_ssh:
            edge.append(
                compute.Firewall(
                    f"{name}-iap-ssh",
                    project=args.project,
                    network=args.network,
                    description=f"SSH to TPU node {name} through IAP TCP forwarding only",
                    tcp_ports=["22"],
                    source_ranges=[IAP_SOURCE_RANGE],
                    target_tags=[tag],
                    opts=child,
                )
            )
        if args.egress_nat and not args.public_endpoint:
            router = compute.Router(
                f"{name}-router", project=args.project, region=region, network=args.network, opts=child
            )
            edge.append(
                compute.RouterNat(f"{name}-nat", project=args.project, region=region, router=router.name, opts=child)
            )
        return edge


def with_tensor_parallel(serve_args: Sequence[str], size: int) -> list[str]:
    """State the tensor-parallel size explicitly on TPU (one chip: 1), unless the arguments already do."""
    args = list(serve_args)
    if not any(arg == "--tensor-parallel-size" or arg.startswith("--tensor-parallel-size=") for arg in args):
        args += ["--tensor-parallel-size", str(size)]
    return args
