"""The promises of a GKE fleet, for every Kubernetes object a stack registers (pulumi-kubernetes).

Why a pack rule beside the settings checks: a manifest written by hand into the program (or changed by a
later refactor) would otherwise slip past the stack schema. The rules are the card's promises on GKE:
- no public Service by default: a LoadBalancer Service is internal (GKE's annotation) or open only to
  named ranges that together are not the internet (policy/source_ranges.py, as for the TPU firewall);
- every container image is pinned (policy/image_pins.py);
- the model bucket's GCS FUSE volume is read-only and mounted with uid= and gid= options (without them
  the files belong to root with 0755 directories the vLLM user may not traverse, the hand-made failure);
- every serving container has startup, readiness and liveness probes (a pod without a startup probe is
  killed by its liveness probe mid-load, or gets traffic before its model is loaded without readiness);
- no credential in any manifest: no Kubernetes Secret with data written by the program, no secret-named
  env var with a literal value, no literal --api-key, no credential-looking string anywhere;
- every pod is hardened: no host namespaces, the RuntimeDefault (or a Localhost) seccomp profile, and
  every container drops ALL capabilities and adds none, is not privileged, cannot escalate privileges and
  has a read-only root filesystem (a shell in a compromised vLLM gets no root powers on the node);
- a NetworkPolicy admits no range that together with the others is the internet.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from policy.credentials import credential_kind
from policy.guardrail import Guardrail
from policy.image_pins import PINNED_HELP, image_pin_problem
from policy.plaintext_secrets import SECRET_NAME, is_literal
from policy.props import field, has_key, mappings, strings, walk_strings
from policy.source_ranges import describe, too_wide
from policy.vllm_args import flag_values, tokens

KUBERNETES_PREFIX = "kubernetes:"
K8S_SERVICE = "kubernetes:core/v1:Service"
K8S_SECRET = "kubernetes:core/v1:Secret"  # noqa: S105 - a type token
INTERNAL_LB_ANNOTATION = "networking.gke.io/load-balancer-type"
GCSFUSE_DRIVER = "gcsfuse.csi.storage.gke.io"
# Where each workload kind keeps its pod template.
POD_SPEC_PATHS: dict[str, tuple[str, ...]] = {
    "kubernetes:apps/v1:Deployment": ("spec", "template", "spec"),
    "kubernetes:apps/v1:StatefulSet": ("spec", "template", "spec"),
    "kubernetes:apps/v1:DaemonSet": ("spec", "template", "spec"),
    "kubernetes:batch/v1:Job": ("spec", "template", "spec"),
    "kubernetes:core/v1:Pod": ("spec",),
}
PROBES = ("startupProbe", "readinessProbe", "livenessProbe")


def _containers(resource_type: str, props: Mapping[str, Any]) -> Iterator[tuple[str, Mapping[str, Any]]]:
    path = POD_SPEC_PATHS[resource_type]
    for group in ("initContainers", "containers"):
        for index, container in enumerate(mappings(field(props, *path, group))):
            yield f"{'.'.join(path)}.{group}[{index}]", container


def check_service_not_public(_type: str, props: Mapping[str, Any], _config: Mapping[str, Any]) -> Iterator[str]:
    kind = field(props, "spec", "type")
    if kind not in {"LoadBalancer", "NodePort"}:
        return
    annotations = field(props, "metadata", "annotations") or {}
    if kind == "LoadBalancer" and annotations.get(INTERNAL_LB_ANNOTATION) == "Internal":
        return
    ranges = strings(field(props, "spec", "loadBalancerSourceRanges"))
    if kind == "NodePort":
        yield "spec.type NodePort opens the port on every node; use an internal LoadBalancer"
    elif not ranges:
        yield (
            f"an external LoadBalancer open to everyone: annotate it {INTERNAL_LB_ANNOTATION}: Internal, or set "
            "spec.loadBalancerSourceRanges to the networks that call it"
        )
    elif wide := too_wide(ranges):
        yield f"spec.loadBalancerSourceRanges {ranges} let in {'; '.join(describe(item) for item in wide)}"


def check_images_pinned(resource_type: str, props: Mapping[str, Any], _config: Mapping[str, Any]) -> Iterator[str]:
    for where, container in _containers(resource_type, props):
        image = field(container, "image")
        if not isinstance(image, str) or not image.strip():
            yield f"{where}.image is missing; name an image with {PINNED_HELP}"
        elif problem := image_pin_problem(image):
            yield f"{where}.image: {problem}"


def check_model_mount(resource_type: str, props: Mapping[str, Any], _config: Mapping[str, Any]) -> Iterator[str]:
    path = POD_SPEC_PATHS[resource_type]
    for index, volume in enumerate(mappings(field(props, *path, "volumes"))):
        if field(volume, "csi", "driver") != GCSFUSE_DRIVER:
            continue
        where = f"{'.'.join(path)}.volumes[{index}]"
        if field(volume, "csi", "readOnly") is not True:
            yield f"{where}: the model bucket must be mounted readOnly: true"
        options = field(volume, "csi", "volumeAttributes", "mountOptions")
        names = (
            {option.split("=", 1)[0].strip() for option in options.split(",")} if isinstance(options, str) else set()
        )
        missing = [name for name in ("uid", "gid") if name not in names]
        if missing:
            yield (
                f"{where}: mountOptions lack {' and '.join(missing)}= (e.g. uid=1001,gid=1001); without them the "
                "weights belong to root and the vLLM user may not read them"
            )


def _serves_a_model(resource_type: str, props: Mapping[str, Any]) -> bool:
    """A pod that mounts the model bucket (GCS FUSE): a model server, whose load the probes must cover."""
    path = POD_SPEC_PATHS[resource_type]
    return any(field(volume, "csi", "driver") == GCSFUSE_DRIVER for volume in mappings(field(props, *path, "volumes")))


def check_probes(resource_type: str, props: Mapping[str, Any], _config: Mapping[str, Any]) -> Iterator[str]:
    if not _serves_a_model(resource_type, props):
        return
    for where, container in _containers(resource_type, props):
        if where.split(".")[-1].startswith("initContainers"):
            continue
        missing = [probe for probe in PROBES if not has_key(container, probe)]
        if missing:
            yield f"{where} has no {', '.join(missing)}; size the startup probe from the model's load time"


def check_no_credentials(resource_type: str, props: Mapping[str, Any], _config: Mapping[str, Any]) -> Iterator[str]:
    if resource_type == K8S_SECRET and (has_key(props, "data") or has_key(props, "stringData")):
        yield "a Kubernetes Secret with data puts the value in the manifest and the state; use Secret Manager"
    if resource_type in POD_SPEC_PATHS:
        for where, container in _containers(resource_type, props):
            for env in mappings(field(container, "env")):
                name = field(env, "name")
                if isinstance(name, str) and SECRET_NAME.search(name) and has_key(env, "value"):
                    yield f"{where}: env {name} has a plain value; mount it from Secret Manager"
            argv = tokens([*strings(field(container, "command")), *strings(field(container, "args"))])
            if any(is_literal(value) for value in flag_values(argv, "--api-key")):
                yield f"{where}: --api-key is given on the command line; read it from a Secret Manager file"
    for where, text in walk_strings(props):
        kind = credential_kind(text)
        if kind:
            yield f"{where or 'a property'} contains {kind}; keep it in Secret Manager"


K8S_NETWORK_POLICY = "kubernetes:networking.k8s.io/v1:NetworkPolicy"
_HOST_NAMESPACES = ("hostNetwork", "hostPID", "hostIPC")
_SAFE_SECCOMP = {"RuntimeDefault", "Localhost"}


def check_pod_hardened(resource_type: str, props: Mapping[str, Any], _config: Mapping[str, Any]) -> Iterator[str]:
    path = POD_SPEC_PATHS[resource_type]
    where_pod = ".".join(path)
    for key in _HOST_NAMESPACES:
        if field(props, *path, key) is True:
            yield f"{where_pod}.{key}: true shares the node's namespace with the pod; remove it"
    pod_seccomp = field(props, *path, "securityContext", "seccompProfile", "type")
    for where, container in _containers(resource_type, props):
        context = field(container, "securityContext") or {}
        seccomp = field(context, "seccompProfile", "type") or pod_seccomp
        if seccomp not in _SAFE_SECCOMP:
            yield f"{where}: seccompProfile {seccomp or 'unset'}; set type: RuntimeDefault (pod or container)"
        if field(context, "privileged") is True:
            yield f"{where}.securityContext.privileged: true gives the container the whole node"
        if field(context, "allowPrivilegeEscalation") is not False:
            yield f"{where}.securityContext.allowPrivilegeEscalation must be false"
        if field(context, "readOnlyRootFilesystem") is not True:
            yield f"{where}.securityContext.readOnlyRootFilesystem must be true (write to emptyDir volumes)"
        dropped = {item.upper() for item in strings(field(context, "capabilities", "drop"))}
        if "ALL" not in dropped:
            yield f"{where}.securityContext.capabilities.drop must list ALL"
        added = strings(field(context, "capabilities", "add"))
        if added:
            yield f"{where}.securityContext.capabilities.add {added}: a serving container needs no capability"


def check_network_policy_narrow(_type: str, props: Mapping[str, Any], _config: Mapping[str, Any]) -> Iterator[str]:
    ranges = [
        cidr
        for rule in mappings(field(props, "spec", "ingress"))
        for peer in mappings(field(rule, "from"))
        if isinstance(cidr := field(peer, "ipBlock", "cidr"), str)
    ]
    for index, rule in enumerate(mappings(field(props, "spec", "ingress"))):
        if not any(True for _ in mappings(field(rule, "from"))):
            yield f"spec.ingress[{index}] has no `from`: it admits every source; name the peers"
    if wide := too_wide(ranges):
        yield f"spec.ingress admits ipBlocks {ranges} that together let in {'; '.join(describe(i) for i in wide)}"


GKE_SERVICE_NOT_PUBLIC = Guardrail(
    name="gke-service-not-public",
    description="A Kubernetes Service is an internal load balancer, or open only to named, narrow ranges.",
    resource_types=frozenset({K8S_SERVICE}),
    check=check_service_not_public,
)
GKE_IMAGES_PINNED = Guardrail(
    name="gke-images-pinned",
    description="Every container image of a Kubernetes workload names one build (release tag or digest).",
    resource_types=frozenset(POD_SPEC_PATHS),
    check=check_images_pinned,
)
GKE_MODEL_MOUNT = Guardrail(
    name="gke-model-mount-uid-gid",
    description="The GCS FUSE model volume is read-only and mounted with uid= and gid= options.",
    resource_types=frozenset(POD_SPEC_PATHS),
    check=check_model_mount,
)
GKE_PROBES = Guardrail(
    name="gke-probes-present",
    description="Every container of a model-serving pod (it mounts the model bucket) has startup, readiness and "
    "liveness probes.",
    resource_types=frozenset(POD_SPEC_PATHS),
    check=check_probes,
)
GKE_NO_CREDENTIALS = Guardrail(
    name="gke-no-credentials",
    description="No credential in any Kubernetes manifest or provider configuration.",
    resource_types=frozenset({"pulumi:providers:kubernetes"}),
    type_prefixes=(KUBERNETES_PREFIX,),
    check=check_no_credentials,
)
GKE_POD_HARDENED = Guardrail(
    name="gke-pod-hardened",
    description=(
        "Pods share no host namespace and use RuntimeDefault seccomp; containers drop ALL capabilities, are not "
        "privileged, cannot escalate and have a read-only root filesystem."
    ),
    resource_types=frozenset(POD_SPEC_PATHS),
    check=check_pod_hardened,
)
GKE_NETWORK_POLICY_NARROW = Guardrail(
    name="gke-network-policy-narrow",
    description="A NetworkPolicy's ipBlocks together never admit the internet.",
    resource_types=frozenset({K8S_NETWORK_POLICY}),
    check=check_network_policy_narrow,
)
KUBERNETES_GUARDRAILS = (
    GKE_SERVICE_NOT_PUBLIC,
    GKE_IMAGES_PINNED,
    GKE_MODEL_MOUNT,
    GKE_PROBES,
    GKE_NO_CREDENTIALS,
    GKE_POD_HARDENED,
    GKE_NETWORK_POLICY_NARROW,
)
