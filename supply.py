"""Everything a stack needs before vLLM starts: enabled APIs, the image it pulls, its secrets, its weights.

Why a module beside `deploy.py`: every platform branch (Cloud Run, TPU) needs the same four things in
the same order, so they live in small functions each branch calls:

- `google_cloud(settings, stack)`: enables the project's APIs (one `gcp.projects.Service` each, never
  disabled on destroy) and returns options with an explicit Google provider that waits for them, so an
  empty project needs no hand step. Pass the options to every component of the stack.
- `image_supply(...)`: the references the service and the import job pull (through the stack's Docker
  Hub mirror by default, or a derived image built from a context in this repository).
- `model_supply(...)`: the Hugging Face token secret (when there is one) and one `ModelImport` per bucket
  path; returns what the server must wait for.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pulumi

from components.derived_image import DerivedImage, DerivedImageArgs
from components.image_mirror import ImageMirror, ImageMirrorArgs
from components.managed_secret import ManagedSecret, ManagedSecretArgs
from components.model_import import ModelImport, ModelImportArgs
from components.project_apis import ProjectApis, ProjectApisArgs
from components.serving_identity import account_id_for
from stacks.accelerators import Accelerator
from stacks.apis import required_apis
from stacks.registry import docker_hub_path
from stacks.secrets import HF_TOKEN_KEY, PlainSecretError, hf_token, set_secret_command
from stacks.settings import DEFAULT_IMAGES, StackSettings

ROOT = Path(__file__).resolve().parent

# The job image for stacks whose serving image is not the CUDA one (TPU): it carries the same clients.
IMPORT_IMAGE_FALLBACK = DEFAULT_IMAGES[Accelerator.NVIDIA_L4]


class SecretConfigError(pulumi.RunError, ValueError):
    """A secret config value is missing or stored in plain text (Pulumi prints it without a traceback)."""


def google_cloud(settings: StackSettings, stack: str) -> pulumi.ResourceOptions:
    """Enable the stack's APIs and return component options whose Google provider waits for them.

    The provider is explicit, so it does not read the stack's other `gcp:*` keys by itself; it takes
    `gcp:project` from the settings and passes on `gcp:impersonateServiceAccount` when set. Credentials
    come from the environment as usual (`gcloud auth application-default login`, GOOGLE_CREDENTIALS).
    """
    assert settings.project is not None
    apis = ProjectApis(
        f"gemma-{stack}-project",
        ProjectApisArgs(
            project=settings.project,
            apis=required_apis(settings),
            impersonate_service_account=pulumi.Config("gcp").get("impersonateServiceAccount"),
        ),
    )
    return apis.options()


@dataclass(frozen=True)
class ImageSupply:
    """What the service and the import job pull."""

    serving: pulumi.Input[str]
    job: pulumi.Input[str]
    # The Docker Hub mirror, when the stack has one: a TPU node must wait for it (and its reader grant).
    mirror: ImageMirror | None = None


def image_supply(
    settings: StackSettings,
    stack: str,
    labels: Mapping[str, str],
    opts: pulumi.ResourceOptions,
    *,
    readers: Mapping[str, pulumi.Input[str]] | None = None,
) -> ImageSupply:
    """The pinned images, through the stack's Docker Hub mirror (default) or built from a context here.

    `readers` are identities that pull by themselves (a TPU VM); Cloud Run needs no grant (image_mirror).
    """
    assert settings.project is not None
    base = f"gemma-{stack}"
    registry = settings.registry
    serving_base = settings.image_ref
    job_base = settings.model_import.image or (serving_base if settings.gpu is not None else IMPORT_IMAGE_FALLBACK)
    mirror: ImageMirror | None = None
    if registry.mirror_docker_hub:
        mirror = ImageMirror(
            f"{base}-mirror",
            ImageMirrorArgs(
                project=settings.project,
                region=settings.region,
                repository_id=f"{base}-dockerhub",
                readers=dict(readers or {}),
                keep_untagged_days=registry.keep_untagged_days,
                labels=labels,
            ),
            opts,
        )

    def pulled(reference: str) -> pulumi.Input[str]:
        return mirror.image(reference) if mirror is not None and docker_hub_path(reference) else reference

    serving: pulumi.Input[str] = pulled(serving_base)
    if registry.build is not None:
        build = registry.build
        if not (ROOT / build.context / build.dockerfile).is_file():
            raise ValueError(
                f"registry.build: no {build.dockerfile} in {build.context}/ (paths are relative to the repository)"
            )
        derived = DerivedImage(
            f"{base}-image",
            DerivedImageArgs(
                project=settings.project,
                region=settings.region,
                repository_id=f"{base}-images",
                context=build.context,
                dockerfile=build.dockerfile,
                base_image=serving,
                name=build.name,
                tag=build.tag,
                platform=build.platform,
                labels=labels,
            ),
            opts,
        )
        serving = derived.repo_digest
    return ImageSupply(serving=serving, job=pulled(job_base), mirror=mirror)


@dataclass
class ModelSupply:
    """The imports of a stack and what the server waits for."""

    imports: dict[str, ModelImport] = field(default_factory=dict)
    token: ManagedSecret | None = None

    @property
    def ready(self) -> list[pulumi.Resource]:
        return [model_import.ready for model_import in self.imports.values()]

    def by_hand(self) -> dict[str, pulumi.Output[str]]:
        """Per bucket path, the command that runs its import by hand (exported as `importJobs`)."""
        return {key: model_import.run_command for key, model_import in self.imports.items()}


def model_supply(
    settings: StackSettings,
    stack: str,
    bucket_name: pulumi.Input[str],
    labels: Mapping[str, str],
    opts: pulumi.ResourceOptions,
    *,
    job_image: pulumi.Input[str],
) -> ModelSupply:
    """The token secret (if configured) and one import job per bucket path that names a source."""
    assert settings.project is not None
    sources = settings.weight_sources()
    supply = ModelSupply()
    if not sources:
        return supply
    base = f"gemma-{stack}"
    try:
        token = hf_token()
    except PlainSecretError as error:
        raise SecretConfigError(str(error)) from None
    gated = [f"{path} ({source.uri})" for path, source in sources.values() if source.needs_token]
    if gated and token is None:
        raise SecretConfigError(
            f"gemma-serving:{HF_TOKEN_KEY} is not set, but {', '.join(gated)} is a gated Hugging Face repo: accept its "
            f"license on the Hub, then run `{set_secret_command(HF_TOKEN_KEY)}` with a read token of that account"
        )
    from_hub = any(source.hugging_face for _, source in sources.values())
    if token is not None and not from_hub:
        pulumi.log.warn(f"gemma-serving:{HF_TOKEN_KEY} is set but no weight source is a Hugging Face repo; unused")
    if token is not None and from_hub:
        supply.token = ManagedSecret(
            f"{base}-hf-token",
            ManagedSecretArgs(secret_id=f"{base}-hf-token", value=token, location=settings.region, labels=labels),
            opts,
        )
    for key, (path, source) in sources.items():
        supply.imports[key] = ModelImport(
            f"{base}-import-{key}",
            ModelImportArgs(
                project=settings.project,
                region=settings.region,
                bucket_name=bucket_name,
                prefix=path,
                source_uri=source.uri,
                revision=source.revision,
                exclude=source.exclude,
                image=job_image,
                account_id=account_id_for(stack, f"imp-{key}"),
                settings=settings.model_import,
                hf_token=supply.token,
                labels=labels,
            ),
            opts,
        )
    return supply
