"""Resources an agent may read: the stack files, and the newest benchmark reports.

Why resources and not tools: they are documents to read, not actions; a client can show or attach them.
Encrypted values in a stack file (`secure:`) are replaced by a marker: ciphertext is no one's business here.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError

from gemma_mcp.context import ServerContext
from gemma_mcp.files import OutsideError, inside, read_bytes_inside, read_text_inside
from gemma_mcp.stack_files import require_stack
from preview.stack_file import StackFileError, stack_file_path

_SECURE_VALUE = re.compile(r"(?m)^(\s*secure:\s*).+$")


def stack_file_text(ctx: ServerContext, stack: str) -> str:
    try:
        path = inside(ctx.root, stack_file_path(ctx.root, require_stack(ctx.root, stack)))
    except (StackFileError, OutsideError) as error:
        raise ResourceError(f"stack {stack!r}: {error}") from None
    text = path.read_text(encoding="utf-8")
    return ctx.redactor.text(_SECURE_VALUE.sub(r"\1[encrypted]", text))


def newest_report(ctx: ServerContext, suffix: str) -> Path:
    """The most recent bench report with this suffix under bench-results/ that a run on this machine wrote.

    Never through a symlink (file or folder), never outside bench-results/, and never a file the repository
    tracks: on a fresh clone a report committed from someone else's machine is not "the latest run".
    """
    folder = ctx.bench_results
    tracked = _tracked_files(ctx.root, folder)
    candidates: list[Path] = []
    for directory, folders, files in os.walk(folder, followlinks=False):
        folders[:] = [name for name in folders if not (Path(directory) / name).is_symlink()]
        for name in files:
            path = Path(directory) / name
            if not name.endswith(suffix) or path.resolve() in tracked:
                continue
            try:
                candidates.append(inside(folder, path))
            except OutsideError:
                continue
    candidates = [path for path in candidates if path.is_file()]
    if not candidates:
        raise ResourceError(f"no bench report ({suffix}) yet under bench-results/: run the bench tool first")
    return max(candidates, key=lambda path: path.stat().st_mtime)


def _tracked_files(root: Path, folder: Path) -> set[Path]:
    """Files under the results folder that git tracks (none outside a git checkout, or when the folder is not in it)."""
    try:
        listed = subprocess.run(
            ["git", "-C", str(root), "ls-files", "-z", "--", str(folder)],
            capture_output=True,
            check=True,
            timeout=10,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return set()
    return {(root / name).resolve() for name in listed.decode("utf-8", "replace").split("\0") if name}


def register(server: MCPServer, ctx: ServerContext) -> None:
    @server.resource(
        "stack://{name}",
        name="stack-file",
        description="A stack file (Pulumi.<name>.yaml): the settings `pulumi up` deploys; encrypted values hidden.",
        mime_type="application/yaml",
    )
    def stack_file(name: str) -> str:
        return stack_file_text(ctx, name)

    @server.resource(
        "bench://latest/report.md",
        name="latest-bench-report",
        description="The newest benchmark report (Markdown): per-cell latency, throughput, failures, warnings.",
        mime_type="text/markdown",
    )
    def latest_markdown() -> str:
        try:
            return ctx.redactor.text(read_text_inside(ctx.bench_results, newest_report(ctx, ".md")))
        except OutsideError as error:
            raise ResourceError(str(error)) from None

    @server.resource(
        "bench://latest/chart.png",
        name="latest-bench-chart",
        description="The newest benchmark chart (PNG): throughput and latency against concurrency, per context.",
        mime_type="image/png",
    )
    def latest_chart() -> bytes:
        try:
            return read_bytes_inside(ctx.bench_results, newest_report(ctx, ".png"))
        except OutsideError as error:
            raise ResourceError(str(error)) from None
