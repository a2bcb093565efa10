"""A stack file's settings as the program reads them, for readers that need more than `verify.ops.stack`.

`verify models` needs the paths a stack serves and `verify memory` the planner's inputs; both read the
stack file exactly as the preview does (preview.stack_file, then stacks.loading), with the project folder
from ``project_root()``. No gcp:project is needed: nothing here calls Google.
"""

from __future__ import annotations

from pathlib import Path

from preview.stack_file import StackFileError, project_root, read_stack_config
from stacks.loading import LoadedStack, StackConfigError, load_stack
from stacks.settings import StackSettings
from verify import UsageError


def load_settings(stack: str, root: Path | None = None) -> StackSettings:
    """``Pulumi.<stack>.yaml``'s settings; UsageError naming the stack and the problem."""
    return load_stack_file(stack, root).settings


def load_stack_file(stack: str, root: Path | None = None) -> LoadedStack:
    """``Pulumi.<stack>.yaml``'s settings and capacity verdict (planned against the project folder's files)."""
    try:
        folder = project_root(root)
        config = read_stack_config(folder, stack)
        return load_stack(config.values, project=config.project, root=folder)
    except (StackFileError, StackConfigError) as error:
        raise UsageError(f"--stack {stack}: {error}") from None
