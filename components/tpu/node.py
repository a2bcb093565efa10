"""`TpuVllmNode`: vLLM on one TPU node (any slice the shapes table lists), with its secrets and network edge.

Owns: the vLLM API key (a random value in a `ManagedSecret`, replicated in the node's region only and
readable only by the node's account); the account's grants on that key, on the Hugging Face token (when
the stack names one) and on Cloud Logging (so the container's output arrives there); firewall rules (the
vLLM port only from named source ranges, SSH only from Google's IAP range); Cloud NAT when the node is
internal-only (so it can pull the image); and the TPU queued resource whose startup script runs vLLM.
Does not own: the account it runs as (a `ServingIdentity` made first, so the image mirror and the model
bucket can grant it read access before the node exists), the model bucket or the weights in it, nor the
image repository it pulls from (deploy.images grants the account `artifactregistry.reader` on the mirror).

Secure defaults: internal IP only, no rule open to 0.0.0.0/0 or ::/0 (refused here and in the settings),
the key never in plain text in metadata, the plan or a command line.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

import pulumi
import pulumi_random as random

from components.managed_secret import ACCESSOR_ROLE, FormerNames, ManagedSecret, ManagedSecretArgs
from components.serving_identity import ServingIdentity
from components.tpu.queued_resource import QueuedResource, QueuedResourceArgs
from components.tpu.request_body import Placement, Provisioning, tier_name
from components.tpu.startup_script import BUCKET_METADATA_KEY, NodeCollector, StartupScriptSpec, render_startup_script
from components.wire import compute, gcp
from policy.credentials import credential_kind
from policy.source_ranges import allowed_text, describe, too_wide
from serving.collectors import METRIC_WRITER_ROLE
from serving.container import MODEL_ROOT, VLLM_PORT
from serving.gcp_names import region_of
from serving.naming import TypeToken
from serving.shapes import resolved, shapes
from serving.vllm_args import with_tensor_parallel

# Stands in for an image reference that is still a Pulumi output while the script's other values are
# validated at construction; the script itself is rendered from the resolved reference.
_UNRESOLVED_IMAGE = "unresolved.invalid/image:pending"

# Source of IAP TCP forwarding (SSH tunnels): https://cloud.google.com/iap/docs/using-tcp-forwarding
IAP_SOURCE_RANGE = "35.235.240.0/20"
# The single-host slices a queued resource can ask for, with their chips (serving/data/shapes.json), and the
# smallest, the default: for a 12B model one chip served ~3x the requests of four (tpu_offers.py).
_SLICES = {entry.name: entry.accelerators for entry in shapes(platform="tpu-vm")}
_SMALLEST = min(_SLICES, key=lambda name: _SLICES[name])


@dataclass(frozen=True)
class NetworkEdge:
    """Who reaches the node and how it reaches out. Defaults are the secure choice."""

    network: str = "default"
    subnetwork: str | None = None
    # False: internal IP only. True: an external IP, reachable only from allowed_source_ranges.
    public_endpoint: bool = False
    # CIDRs that may open the vLLM port; never 0.0.0.0/0 or ::/0.
    allowed_source_ranges: Sequence[str] = ()
    # SSH from Google's IAP range only (for `gcloud ... tpu-vm ssh --tunnel-through-iap`).
    iap_ssh: bool = True
    # Cloud NAT so an internal-only node can pull its image.
    egress_nat: bool = True


@dataclass(frozen=True)
class QueueTerms:
    """On what terms the queued resource asks for a node and how long `pulumi up` waits for one."""

    provisioning: Provisioning
    # Google fails the request if no node arrived within this time (None: no limit).
    valid_until_seconds: int | None = None
    active_deadline_seconds: int = 2 * 3600
    # Where else to ask, in order, when the stack's zone and tier refuse, fail or time out.
    fallbacks: Sequence[Placement] = ()


@dataclass(frozen=True)
class NodeWeights:
    """Where the node's checkpoints come from and where vLLM finds them on the VM."""

    bucket_name: pulumi.Input[str]
    # Checkpoint directories in the bucket the VM copies (the model, and a drafter if any).
    dirs: Sequence[str]
    root: str = MODEL_ROOT
    # The bucket prefix keeping vLLM's XLA compile cache between boots (the node may write it); None: not kept.
    compile_cache_prefix: str | None = None


@dataclass(frozen=True)
class TpuVllmNodeArgs:
    """Inputs of one TPU vLLM node. Defaults are the secure choice."""

    project: str
    zone: str
    queue: QueueTerms
    # The pinned image; an output when it comes through the stack's Artifact Registry mirror.
    image: pulumi.Input[str]
    # The full `vllm serve` arguments (model path under weights.root first), from the stack's vLLM settings.
    serve_args: Sequence[str]
    # What runs vLLM: the route guard's launcher (`python3 -c <launcher> <config> serve`, serving/route_guard.py).
    serving_command: Sequence[str]
    weights: NodeWeights
    # The account the VM runs as, made before the node so the image mirror and the model bucket can grant
    # it read access first (the node's image reference comes from that mirror).
    identity: ServingIdentity
    accelerator_type: str = _SMALLEST
    # The TPU VM image: the default slice's own (serving/shapes.py); the settings pass the stack's slice's.
    runtime_version: str = resolved(_SMALLEST).tpu_vm_runtime
    tensor_parallel_size: int = 1
    port: int = VLLM_PORT
    edge: NetworkEdge = NetworkEdge()
    hf_token_secret: str | None = None
    env: Mapping[str, str] = field(default_factory=lambda: {"HF_HUB_OFFLINE": "1"})
    labels: Mapping[str, str] = field(default_factory=dict)
    # The metrics collector started beside vLLM (its identity may then write metrics); None: none.
    collector: NodeCollector | None = None
    # What must exist before the VM boots besides the node's own grants: the weight imports and the
    # bucket's reader grant (so vLLM never starts against an empty or unreadable bucket path) and the
    # image mirror with its reader binding.
    wait_for: Sequence[pulumi.Resource] = ()

    def problems(self) -> list[str]:
        """Every reason these inputs would build an unsafe or unworkable node."""
        found: list[str] = []
        chips = _SLICES.get(self.accelerator_type)
        if chips is None:
            found.append(f"accelerator_type {self.accelerator_type!r}: expected one of {', '.join(_SLICES)}")
        elif not 1 <= self.tensor_parallel_size <= chips:
            found.append(
                f"tensor_parallel_size {self.tensor_parallel_size} does not fit {self.accelerator_type} "
                f"({chips} chip(s)); for a 12B model use {_SMALLEST} with tensor parallel 1"
            )
        if self.edge.public_endpoint and not self.edge.allowed_source_ranges:
            found.append("edge.allowed_source_ranges is required when edge.public_endpoint is true")
        for cidr in self.edge.allowed_source_ranges:
            found.extend(_range_problems(cidr))
        found += [
            f"allowed_source_ranges together let in {describe(item)}; /metrics and /tokenize need no API key: "
            f"allow {allowed_text()}"
            for item in too_wide(self.edge.allowed_source_ranges)
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
        return found


def _range_problems(cidr: str) -> list[str]:
    try:
        network = ipaddress.ip_network(cidr, strict=True)
    except ValueError as error:
        return [f"allowed source range {cidr!r} is not a CIDR ({error})"]
    if network.prefixlen == 0:
        return [f"allowed source range {cidr!r} opens the vLLM port to the whole internet; name the callers' networks"]
    return []


class TpuVllmNode(pulumi.ComponentResource):
    """vLLM on a TPU node obtained through a queued resource; reachable only where allowed."""

    endpoint: pulumi.Output[str]
    queued_resource_name: pulumi.Output[str]
    node_id: pulumi.Output[str]
    api_key_secret: pulumi.Output[str]
    service_account_email: pulumi.Output[str]
    internal_ip: pulumi.Output[str]
    image: pulumi.Output[str]
    zone: pulumi.Output[str]
    provisioning_model: pulumi.Output[str]

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
            serving_command=list(args.serving_command),
            model_dirs=list(args.weights.dirs),
            api_key_secret=secret_id,
            hf_token_secret=args.hf_token_secret,
            port=args.port,
            model_root=args.weights.root,
            env=dict(args.env),
            collector=args.collector,
            compile_cache_prefix=args.weights.compile_cache_prefix,
        )
        # Rendered from the resolved image reference (a string in apply; no resource is made there).
        script = pulumi.Output.from_input(args.image).apply(
            lambda image: render_startup_script(replace(spec, image=image))
        )
        super().__init__(TypeToken.TPU_VLLM_NODE, name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        region = region_of(args.zone)
        tag = name

        identity = args.identity
        member = identity.member
        # Known before the account exists, so the plan can show the full queued-resource request.
        email = identity.planned_email(args.project)

        grants: list[pulumi.Resource] = [
            gcp.ProjectIamMember(
                f"{name}-log-writer",
                project=args.project,
                role="roles/logging.logWriter",
                member=member,
                opts=child,
            ),
        ]
        if args.collector is not None:
            grants.append(
                gcp.ProjectIamMember(
                    f"{name}-metric-writer", project=args.project, role=METRIC_WRITER_ROLE, member=member, opts=child
                )
            )

        api_key = random.RandomPassword(f"{name}-api-key", length=48, special=False, opts=child)
        # The key's data stays in the node's region, like every secret of the stack (ManagedSecret).
        secret = ManagedSecret(
            f"{name}-api-key",
            ManagedSecretArgs(
                secret_id=secret_id,
                value=api_key.result,
                location=region,
                labels=args.labels,
                # Before ManagedSecret owned it, the node held the secret and its version as `<name>-api-key`.
                former_names=FormerNames(secret=f"{name}-api-key", version=f"{name}-api-key", parent=self),
            ),
            opts=child,
        )
        grants += [
            secret,
            gcp.SecretIamMember(
                f"{name}-api-key-reader",
                project=args.project,
                secret_id=secret.secret_id,
                role=ACCESSOR_ROLE,
                member=member,
                opts=child,
            ),
        ]
        if args.hf_token_secret:
            grants.append(
                gcp.SecretIamMember(
                    f"{name}-hf-token-reader",
                    project=args.project,
                    secret_id=args.hf_token_secret.rsplit("/", 1)[-1],
                    role=ACCESSOR_ROLE,
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
                provisioning=args.queue.provisioning,
                network=args.edge.network,
                subnetwork=args.edge.subnetwork,
                enable_external_ips=args.edge.public_endpoint,
                labels=dict(args.labels),
                metadata={BUCKET_METADATA_KEY: args.weights.bucket_name},
                network_tags=[tag],
                valid_until_seconds=args.queue.valid_until_seconds,
                active_deadline_seconds=args.queue.active_deadline_seconds,
                fallbacks=args.queue.fallbacks,
            ),
            # The VM reads the bucket and the secret and pulls the image at first boot: every grant, the
            # weights and the image repository must exist before it.
            opts=pulumi.ResourceOptions(parent=self, depends_on=[identity, *grants, *args.wait_for]),
        )

        address = queued.external_ip if args.edge.public_endpoint else queued.internal_ip
        self.endpoint = address.apply(lambda ip: f"http://{ip}:{args.port}")
        self.queued_resource_name = queued.queued_resource_name
        self.node_id = pulumi.Output.from_input(name)
        self.api_key_secret = pulumi.Output.from_input(f"projects/{args.project}/secrets/{secret_id}")
        self.service_account_email = identity.email
        self.image = pulumi.Output.from_input(args.image)
        self.internal_ip = queued.internal_ip
        # Where the node landed: the one zone and tier, or (with fallbacks) the placement Google granted.
        fixed = not args.queue.fallbacks
        self.zone = pulumi.Output.from_input(args.zone) if fixed else queued.placement_zone
        self.provisioning_model = (
            pulumi.Output.from_input(tier_name(args.queue.provisioning)) if fixed else queued.placement_model
        )
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
        network = args.edge
        edge: list[pulumi.Resource] = []
        if network.allowed_source_ranges:
            edge.append(
                gcp.Firewall(
                    f"{name}-vllm-port",
                    project=args.project,
                    network=network.network,
                    description=f"vLLM port of TPU node {name}, from named ranges only",
                    direction="INGRESS",
                    allows=[compute.firewall_allow(protocol="tcp", ports=[str(args.port)])],
                    source_ranges=list(network.allowed_source_ranges),
                    target_tags=[tag],
                    opts=child,
                )
            )
        if network.iap_ssh:
            edge.append(
                gcp.Firewall(
                    f"{name}-iap-ssh",
                    project=args.project,
                    network=network.network,
                    description=f"SSH to TPU node {name} through IAP TCP forwarding only",
                    direction="INGRESS",
                    allows=[compute.firewall_allow(protocol="tcp", ports=["22"])],
                    source_ranges=[IAP_SOURCE_RANGE],
                    target_tags=[tag],
                    opts=child,
                )
            )
        if network.egress_nat and not network.public_endpoint:
            # One NAT per region the node may land in (a fallback zone in another region needs its own).
            for other in _placement_regions(args):
                suffix = "" if other == region else f"-{other}"
                router = gcp.Router(
                    f"{name}-router{suffix}", project=args.project, region=other, network=network.network, opts=child
                )
                edge.append(
                    gcp.RouterNat(
                        f"{name}-nat{suffix}",
                        project=args.project,
                        region=other,
                        router=router.name,
                        nat_ip_allocate_option="AUTO_ONLY",
                        source_subnetwork_ip_ranges_to_nat="ALL_SUBNETWORKS_ALL_IP_RANGES",
                        log_config=compute.router_nat_log_config(enable=True, filter="ERRORS_ONLY"),
                        opts=child,
                    )
                )
        return edge


def _placement_regions(args: TpuVllmNodeArgs) -> list[str]:
    """The regions of the node's zone and its fallbacks, in order, each once."""
    regions: list[str] = []
    for zone in (args.zone, *(placement.zone for placement in args.queue.fallbacks)):
        if region_of(zone) not in regions:
            regions.append(region_of(zone))
    return regions
