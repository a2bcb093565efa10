"""`verify models` as a function: ``list_models(stack, ModelsOptions) -> BucketInventory``.

The bucket is the stack's ``modelBucket`` output (through the Pulumi gateway), or ``options.bucket``; the paths
the stack serves (its model and drafter directories) come from its stack file, as the program reads it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pydantic

from remote.google_client import GoogleApis
from remote.google_errors import CannotCheckError, GoogleApiError
from verify import UsageError
from verify.models.bucket import bucket_name, list_objects, read_marker
from verify.models.inventory import BucketInventory, inventory
from verify.ops.google import apis_from_environment
from verify.pulumi_gateway import AutomationGateway, StackOutputsReader
from verify.stack_settings import load_settings


class ModelsOptions(pydantic.BaseModel):
    """``bucket``: list this bucket instead of the stack's modelBucket output."""

    model_config = pydantic.ConfigDict(frozen=True, extra="forbid")

    bucket: str | None = None


class BucketUnreadableError(Exception):
    """The bucket could not be listed (no credentials, no such bucket, no permission): the command exits 2."""

    def __init__(self, bucket: str, problem: Exception) -> None:
        super().__init__(f"cannot read gs://{bucket}: {problem}")
        self.bucket = bucket


def served_dirs(stack: str, root: Path | None = None) -> list[str]:
    """The bucket directories the stack's server reads (model, then drafter), from its stack file."""
    return list(load_settings(stack, root).model_dirs)


def bucket_of(stack: str, pulumi: StackOutputsReader | None = None) -> str:
    """The stack's ``modelBucket`` output (docs/architecture.md, "Stack outputs")."""
    bucket = (pulumi or AutomationGateway()).outputs(stack).outputs.model_bucket
    if not bucket:
        raise UsageError(f"stack {stack!r} has no modelBucket output (not deployed?); pass --bucket NAME")
    return bucket


def run_models(apis: GoogleApis, bucket: str, served: dict[str, list[str]]) -> BucketInventory:
    """List ``bucket`` and read each completion marker in it; raises GoogleApiError / CannotCheckError."""
    return inventory(bucket, list_objects(apis, bucket), lambda name: read_marker(apis, bucket, name), served)


def list_models(
    stack: str,
    options: ModelsOptions,
    *,
    open_apis: Callable[[], GoogleApis] = apis_from_environment,
    pulumi: StackOutputsReader | None = None,
    root: Path | None = None,
) -> BucketInventory:
    """The bucket's checkpoints and which the stack serves. Raises ``UsageError`` (a bad bucket name, no
    modelBucket output) and ``BucketUnreadableError`` (exit 2 each)."""
    served = {stack: served_dirs(stack, root)}
    try:
        bucket = bucket_name(options.bucket, where="--bucket") if options.bucket else bucket_of(stack, pulumi)
    except ValueError as error:
        raise UsageError(str(error)) from None
    try:
        with open_apis() as apis:
            return run_models(apis, bucket, served)
    except (CannotCheckError, GoogleApiError) as error:
        raise BucketUnreadableError(bucket, error) from error
