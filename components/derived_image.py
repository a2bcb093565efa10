"""A derived vLLM image: a Dockerfile in this repository, built FROM the mirrored base and pushed to a
standard Artifact Registry repository in the stack's region.

Why: some fixes (a patched parser, an extra pinned package) cannot be expressed as flags; building them
into an image the stack pins by digest keeps the deployment reproducible. The image is built only by
`pulumi up` (never on preview: a preview must not need a Docker engine), and the service runs it by its
repository digest, so a rebuilt tag can never change a running stack behind its back; the repository's
tags are immutable as well.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import PurePosixPath

import pulumi
import pulumi_gcp

from components.wire import artifactregistry, gcp
from policy.image_pins import image_pin_problem
from serving.gcp_names import RFC1035_ID
from serving.images import registry_host
from serving.naming import TypeToken

# Artifact Registry accepts an OAuth access token as the password of this fixed user name
# (https://cloud.google.com/artifact-registry/docs/docker/authentication#token).
REGISTRY_USER = "oauth2accesstoken"


@dataclass(frozen=True)
class DerivedImageArgs:
    """What to build (context, Dockerfile, base) and where to push it (name:tag in a standard repo)."""

    project: str
    region: str
    repository_id: str
    # Relative to the program's directory (Pulumi runs the program there).
    context: str
    base_image: pulumi.Input[str]
    name: str
    tag: str
    dockerfile: str = "Dockerfile"
    platform: str = "linux/amd64"
    labels: Mapping[str, str] = field(default_factory=dict)
    # Immutable tags (the default): a tag names one build forever. An image rebuilt under the same tag on
    # every change of its sources (verify-bench) needs them mutable; it is still run by digest.
    immutable_tags: bool = True
    description: str = "gemma-serving derived vLLM images"

    def __post_init__(self) -> None:
        problems: list[str] = []
        if not self.project or not self.region:
            problems.append("DerivedImageArgs.project and .region are required")
        if not RFC1035_ID.match(self.repository_id):
            problems.append(f"DerivedImageArgs.repository_id {self.repository_id!r}: lowercase letters, digits, '-'")
        if PurePosixPath(self.context).is_absolute() or ".." in PurePosixPath(self.context).parts:
            problems.append(f"DerivedImageArgs.context {self.context!r}: a path inside the repository")
        if image_pin_problem(f"{self.name}:{self.tag}"):
            problems.append(f"DerivedImageArgs.tag {self.tag!r}: a tag that names one build, never latest")
        if problems:
            raise ValueError("; ".join(problems))

    @property
    def image_name(self) -> str:
        return f"{registry_host(self.region)}/{self.project}/{self.repository_id}/{self.name}:{self.tag}"


class DerivedImage(pulumi.ComponentResource):
    """Owns: the standard repository and the image build. Exposes the image pinned by digest."""

    image_name: pulumi.Output[str]
    # <image>@sha256:...: what services run (known only after the build, on `pulumi up`).
    repo_digest: pulumi.Output[str]

    def __init__(self, name: str, args: DerivedImageArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        # Only a stack that builds an image loads the Docker provider SDK (a plan of one that does not never
        # pays for it: tests/test_plan_imports.py).
        import pulumi_docker as docker  # noqa: PLC0415 - see above

        super().__init__(TypeToken.DERIVED_IMAGE, name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        repository = gcp.Repository(
            f"{name}-repo",
            project=args.project,
            location=args.region,
            repository_id=args.repository_id,
            format="DOCKER",
            mode="STANDARD_REPOSITORY",
            description=args.description,
            docker_config=artifactregistry.docker_config(immutable_tags=args.immutable_tags),
            labels=dict(args.labels),
            opts=child,
        )
        client = pulumi_gcp.organizations.get_client_config_output(opts=pulumi.InvokeOutputOptions(parent=self))
        image = docker.Image(
            f"{name}-image",
            image_name=args.image_name,
            build=docker.DockerBuildArgs(
                context=args.context,
                dockerfile=f"{args.context}/{args.dockerfile}",
                platform=args.platform,
                args={"BASE_IMAGE": args.base_image},
            ),
            build_on_preview=False,
            registry=docker.RegistryArgs(
                server=registry_host(args.region),
                username=REGISTRY_USER,
                password=pulumi.Output.secret(client.access_token),
            ),
            opts=pulumi.ResourceOptions(parent=self, depends_on=[repository]),
        )
        self.image_name = image.image_name
        self.repo_digest = image.repo_digest
        self.register_outputs({"image_name": self.image_name, "repo_digest": self.repo_digest})
