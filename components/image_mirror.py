"""An Artifact Registry remote repository that mirrors Docker Hub in the stack's region.

Why: the hand-made deployments pulled `vllm/vllm-openai:nightly` straight from Docker Hub: unpinned,
subject to Docker Hub's anonymous pull limits, and fetched across the internet on every deploy. Through
this mirror a pinned tag is fetched from Docker Hub once, then served from the stack's region (Cloud Run
imports it at deploy time; a TPU VM pulls it with its own identity).

Access: Cloud Run imports images with its service agent, which may read Artifact Registry in its own
project without a grant (https://cloud.google.com/artifact-registry/docs/integrate-cloud-run: only a
repository in another project needs `roles/artifactregistry.reader` for the agent). So a Cloud Run stack
grants nobody; `readers` is for identities that pull themselves, such as a TPU VM's service account.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import pulumi

from components.wire import artifactregistry, gcp
from serving.gcp_names import BINDING_KEY, RFC1035_ID
from serving.images import docker_hub_path, registry_host
from serving.naming import TypeToken

READER_ROLE = "roles/artifactregistry.reader"


@dataclass(frozen=True)
class ImageMirrorArgs:
    """Where the mirror lives and who may pull through it."""

    project: str
    region: str
    repository_id: str
    readers: Mapping[str, pulumi.Input[str]] = field(default_factory=dict)
    # Cached versions that lost their tag are deleted after this many days.
    keep_untagged_days: int = 30
    labels: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.project or not self.region:
            raise ValueError("ImageMirrorArgs.project and .region are required")
        if not RFC1035_ID.match(self.repository_id):
            raise ValueError(
                f"ImageMirrorArgs.repository_id {self.repository_id!r}: lowercase letters, digits and '-', "
                "starting with a letter (at most 63)"
            )
        for key in self.readers:
            if not BINDING_KEY.match(key):
                raise ValueError(f"ImageMirrorArgs.readers key {key!r}: lowercase letters, digits and '-'")
        if self.keep_untagged_days < 1:
            raise ValueError("ImageMirrorArgs.keep_untagged_days must be at least 1")


class ImageMirror(pulumi.ComponentResource):
    """Owns: the remote repository and its reader bindings."""

    repository_id: pulumi.Output[str]
    # <region>-docker.pkg.dev/<project>/<repository>: prefix of every mirrored image.
    path: pulumi.Output[str]

    def __init__(self, name: str, args: ImageMirrorArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(TypeToken.IMAGE_MIRROR, name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        repository = gcp.Repository(
            f"{name}-repo",
            project=args.project,
            location=args.region,
            repository_id=args.repository_id,
            format="DOCKER",
            mode="REMOTE_REPOSITORY",
            description=f"Docker Hub, cached in {args.region} for gemma-serving",
            remote_repository_config=artifactregistry.remote_repository_config(
                description="Docker Hub",
                docker_repository=artifactregistry.docker_repository(public_repository="DOCKER_HUB"),
            ),
            cleanup_policies=[
                artifactregistry.cleanup_policy(
                    id="drop-untagged",
                    action="DELETE",
                    condition=artifactregistry.cleanup_condition(
                        tag_state="UNTAGGED", older_than=f"{args.keep_untagged_days * 86400}s"
                    ),
                )
            ],
            labels=dict(args.labels),
            opts=child,
        )
        for key, member in args.readers.items():
            gcp.RepositoryIamMember(
                f"{name}-reader-{key}",
                project=args.project,
                location=args.region,
                repository=repository.repository_id,
                role=READER_ROLE,
                member=member,
                opts=child,
            )
        host = registry_host(args.region)
        self.repository_id = repository.repository_id
        # Built from the repository's output, so whatever pulls through it waits for the repository.
        self.path = repository.repository_id.apply(lambda repo_id: f"{host}/{args.project}/{repo_id}")
        self.register_outputs({"repository_id": self.repository_id, "path": self.path})

    def image(self, reference: str) -> pulumi.Output[str]:
        """The mirrored reference of a Docker Hub image (`vllm/vllm-openai:v0.32.0` -> `<path>/vllm/...`)."""
        inside = docker_hub_path(reference)
        if inside is None:
            raise ValueError(f"{reference!r} is not a Docker Hub image; the mirror only fronts Docker Hub")
        return self.path.apply(lambda path: f"{path}/{inside}")
