"""The weights a stack serves: the Hugging Face token secret (if any) and one import job per checkpoint.

Why: the server must never start against an empty bucket path; `ModelSupply.ready` is what the server
waits for, and `by_hand()` is the command per checkpoint the stack exports as `importJobs`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pulumi

from components.import_identity import ImportIdentity, ImportIdentityArgs
from components.managed_secret import ManagedSecret, ManagedSecretArgs
from components.model_bucket import CacheFolder, ModelBucket, ModelBucketArgs
from components.model_import import (
    AdapterExpectation,
    ImportJobSpec,
    ImportWriter,
    ModelImport,
    ModelImportArgs,
)
from deploy.context import StackContext
from serving.adapter_versions import ROUTES_OBJECT
from serving.compile_cache import CACHE_FOLDER
from serving.lora import ADAPTERS_FOLDER
from serving.lora_shapes import layer_shapes
from stacks.adapters import AdapterSettings
from stacks.catalog_checks import Served, served_checkpoint
from stacks.secrets import HF_TOKEN_KEY, PlainSecretError, hf_token, set_secret_command
from stacks.settings import StackSettings
from stacks.weights import ModelImportSettings

# The role of the one identity (and the name of its component) every adapter import of a stack runs as.
ADAPTER_IMPORTS = "imp-adapters"


class SecretConfigError(pulumi.RunError, ValueError):
    """A secret config value is missing or stored in plain text (Pulumi prints it without a traceback)."""


@dataclass
class ModelSupply:
    """The imports of a stack and what the server waits for."""

    imports: dict[str, ModelImport] = field(default_factory=dict)
    token: ManagedSecret | None = None
    # One import per LoRA adapter (role `a-<name>`); the server never waits for these.
    adapter_imports: dict[str, ModelImport] = field(default_factory=dict)

    @property
    def ready(self) -> list[pulumi.Resource]:
        return [model_import.ready for model_import in self.imports.values()]

    def by_hand(self) -> dict[str, pulumi.Output[str]]:
        """Per bucket path, the command that runs its import by hand (exported as `importJobs`)."""
        every = {**self.imports, **self.adapter_imports}
        return {key: model_import.run_command for key, model_import in every.items()}


def model_bucket(
    settings: StackSettings,
    context: StackContext,
    reader: pulumi.Input[str],
    opts: pulumi.ResourceOptions,
    *,
    reader_aliases: list[pulumi.Alias] | None = None,
) -> ModelBucket:
    """The stack's private model bucket, readable by the serving identity `reader` alone (which may write its
    compile-cache folder, and nothing else, when the stack keeps the cache).

    One place for every platform, so a bucket setting (`bucket.name`, `location`, `forceDestroy`) means the
    same on Cloud Run, TPU and GKE.
    """
    return ModelBucket(
        context.names.model_bucket,
        ModelBucketArgs(
            location=settings.bucket.location or settings.region,
            readers={"serving": reader},
            reader_aliases={"serving": reader_aliases} if reader_aliases else {},
            labels=context.labels,
            force_destroy=settings.bucket.force_destroy,
            bucket_name=settings.bucket.name,
            cache=(
                CacheFolder(CACHE_FOLDER, writer=reader, max_age_days=settings.compile_cache.max_age_days)
                if settings.compile_cache.keep
                else None
            ),
            kept_folders=(ADAPTERS_FOLDER,) if settings.adapters else (),
        ),
        opts,
    )


def model_supply(
    settings: StackSettings,
    context: StackContext,
    bucket_name: pulumi.Input[str],
    opts: pulumi.ResourceOptions,
    *,
    job_image: pulumi.Input[str],
) -> ModelSupply:
    """The token secret (if configured) and one import job per bucket path that names a source."""
    sources = settings.weight_sources()
    adapters = settings.adapter_sources()
    supply = ModelSupply()
    sources = {**sources, **{role: (path, adapter.source) for role, (path, adapter) in adapters.items()}}
    # Before anything else, on every platform: a token in plain text sits in the stack file whether or not a
    # source uses it (a GKE stack filling its bucket by hand used to pass with one).
    try:
        token = hf_token()
    except PlainSecretError as error:
        raise SecretConfigError(str(error)) from None
    if not sources:
        if token is not None:
            pulumi.log.warn(f"gemma-serving:{HF_TOKEN_KEY} is set but no weight source is a Hugging Face repo; unused")
        return supply
    labels = context.labels
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
            context.names.hf_token_secret,
            ManagedSecretArgs(
                secret_id=context.names.hf_token_secret, value=token, location=settings.region, labels=labels
            ),
            opts,
        )
    writer = adapter_writer(settings, context, bucket_name, supply.token, opts) if adapters else None
    for key, (path, source) in sources.items():
        adapter = adapters[key][1] if key in adapters else None
        target = supply.adapter_imports if adapter is not None else supply.imports
        target[key] = ModelImport(
            context.names.import_job(key),
            ModelImportArgs(
                project=context.project,
                region=settings.region,
                bucket_name=bucket_name,
                prefix=path,
                source_uri=source.uri,
                revision=source.revision,
                exclude=source.exclude,
                image=job_image,
                account_id=context.names.account_id(ADAPTER_IMPORTS if adapter is not None else f"imp-{key}"),
                display_name=context.names.display_name(f"weight import: {key}"),
                job=_job_spec(settings.model_import),
                hf_token=supply.token,
                labels=labels,
                adapter=adapter_expectation(adapter, settings) if adapter is not None else None,
                writer=writer if adapter is not None else None,
            ),
            opts,
        )
    return supply


def adapter_routes(settings: StackSettings, bucket_name: pulumi.Input[str]) -> pulumi.Output[str] | None:
    """The `adapterRoutes` output: where the route table is (None without adapters)."""
    if not settings.adapters:
        return None
    return pulumi.Output.concat("gs://", bucket_name, "/", ROUTES_OBJECT)


def adapter_writer(
    settings: StackSettings,
    context: StackContext,
    bucket_name: pulumi.Input[str],
    token: ManagedSecret | None,
    opts: pulumi.ResourceOptions,
) -> ImportWriter:
    """One identity for every adapter import of the stack, writing `adapters/` only (components/import_identity.py):
    the stack's service accounts stay at a fixed count however many adapters it declares."""
    hub = any(adapter.source.hugging_face is not None for adapter in settings.adapters)
    identity = ImportIdentity(
        context.names.import_job("adapters"),
        ImportIdentityArgs(
            project=context.project,
            bucket_name=bucket_name,
            folder=ADAPTERS_FOLDER,
            account_id=context.names.account_id(ADAPTER_IMPORTS),
            display_name=context.names.display_name("adapter imports"),
            description=f"Copies the stack's adapter versions into the model bucket, under {ADAPTERS_FOLDER}/ only.",
            hf_token=token if hub else None,
        ),
        opts,
    )
    return identity.writer


def adapter_expectation(adapter: AdapterSettings, settings: StackSettings) -> AdapterExpectation:
    """What the import job checks the adapter's config and tensors against, and the base path it rewrites."""
    served = served_checkpoint(settings.model)
    return AdapterExpectation(
        name=adapter.name,
        version=adapter.version_label,
        bases=tuple(sorted(settings.adapter_bases())),
        rank=adapter.rank,
        target_modules=adapter.target_modules,
        served_model_path=f"{settings.model_root}/{settings.model.path}",
        shapes=layer_shapes(served.model.text_config) if isinstance(served, Served) else None,
    )


def _job_spec(job: ModelImportSettings) -> ImportJobSpec:
    return ImportJobSpec(
        workers=job.workers,
        chunk_mib=job.chunk_mib,
        cpu=job.cpu,
        memory_gib=job.memory_gib,
        timeout_minutes=job.timeout_minutes,
        max_retries=job.max_retries,
        run_on_up=job.run_on_up,
    )
