"""The models tool: what a stack's model bucket holds, read in process like status (see tools_ops)."""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult

from gemma_mcp.context import ServerContext
from gemma_mcp.results import ModelsReport
from gemma_mcp.stack_files import require_stack
from gemma_mcp.tools_ops import READS_THE_PROJECT
from gemma_mcp.tools_stacks import reply
from remote.google_errors import CannotCheckError, GoogleApiError
from verify import UsageError
from verify.models.bucket import bucket_name
from verify.models.run import run_models, served_dirs


def register(server: MCPServer, ctx: ServerContext) -> None:
    @server.tool(
        name="models",
        annotations=READS_THE_PROJECT,
        description=(
            "What a stack's model bucket holds: every completed weight import (source, revision, files, bytes, "
            "from the marker the import job writes last), imports without a marker (stopped or running) or whose "
            "files changed since, and which path the stack serves. The bucket is the stack's modelBucket output "
            "(or give bucket). passed=false with exit_code 1: the served path is not a complete import (the "
            "server cannot start from it); 2: the bucket could not be read. Read-only, free."
        ),
    )
    def models(stack: str, bucket: str | None = None) -> Annotated[CallToolResult, ModelsReport]:
        name = require_stack(ctx.root, stack)
        try:
            served = {name: served_dirs(name, ctx.root)}
        except UsageError as error:
            raise ToolError(str(error)) from None
        where = bucket_name(bucket, where="bucket") if bucket is not None else _bucket_output(ctx, name)
        try:
            with ctx.google() as apis:
                found = run_models(apis, where, served)
        except (CannotCheckError, GoogleApiError) as error:
            report = ModelsReport(stack=name, bucket=where, exit_code=2, passed=False, report=None, message=str(error))
            return reply(ctx, f"models: cannot read gs://{where}: {error}", report)
        report = ModelsReport(
            stack=name,
            bucket=where,
            exit_code=found.exit_code,
            passed=found.exit_code == 0,
            report=found,
        )
        lines = [f"gs://{where}"] + [
            f"  {c.path}: {c.state.value}"
            + (f" {c.source}@{c.revision}" if c.source else "")
            + f", {c.files} files, {c.bytes} bytes"
            + (f" <- served by {', '.join(c.served_by)}" if c.served_by else "")
            for c in found.checkpoints
        ]
        return reply(ctx, "\n".join(lines), report)


def _bucket_output(ctx: ServerContext, stack: str) -> str:
    try:
        value = ctx.pulumi.outputs(stack).outputs.model_bucket
    except Exception as error:  # noqa: BLE001 - the Automation API raises many kinds; all mean "not readable"
        raise ToolError(f"stack {stack!r}: its outputs could not be read ({error}); give bucket") from None
    if not value:
        raise ToolError(f"stack {stack!r} has no modelBucket output (not deployed?); give bucket")
    return value
