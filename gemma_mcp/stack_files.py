"""The stack files in the project root, read and validated exactly as `python -m preview` reads them.

Why one module: the agent's stack names and settings errors must be the CLI's, word for word, and the
settings' shape belongs to `stacks`; this is the one place the server depends on it.
"""

from __future__ import annotations

from pathlib import Path

from mcp.server.mcpserver.exceptions import ToolError

from gemma_mcp.results import StackSummary
from preview.stack_file import StackFileError, available_stacks, read_stack_config
from stacks.loading import StackConfigError, settings_from_config


def stack_names(root: Path) -> list[str]:
    return available_stacks(root)


def require_stack(root: Path, stack: str) -> str:
    """The stack name if a stack file exists for it; otherwise the CLI's message, as a tool error."""
    known = stack_names(root)
    if stack not in known:
        raise ToolError(f"no stack file Pulumi.{stack}.yaml; stacks here: {', '.join(known) or 'none'}")
    return stack


def summarise(root: Path, stack: str) -> StackSummary:
    """Accelerator, region and model of one stack, or the problems that stop it from loading."""
    try:
        config = read_stack_config(root, stack)
        settings = settings_from_config(config.values, project=config.project, root=root)
    except StackFileError as error:
        return StackSummary(name=stack, valid=False, problems=[str(error)])
    except StackConfigError as error:
        return StackSummary(name=stack, valid=False, problems=list(error.problems))
    return StackSummary(
        name=stack,
        valid=True,
        accelerator=settings.accelerator,
        platform=settings.PLATFORM,
        region=settings.region,
        zone=settings.zone,
        model_path=settings.model.path,
        served_model_name=settings.model.served_name,
        project=settings.project,
        file=f"Pulumi.{stack}.yaml",
    )
