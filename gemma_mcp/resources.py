"""Resources an agent may read: the stack files, and the newest benchmark reports.

Why resources and not tools: they are documents to read, not actions; a client can show or attach them.
Encrypted values in a stack file (`secure:`) are replaced by a marker: ciphertext is no one's business here.
"""

from __future__ import annotations

import re
from pathlib import Path

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError

from gemma_mcp.context import ServerContext
from gemma_mcp.stack_files import require_stack

_SECURE_VALUE = re.compile(r"(?m)^(\s*secure:\s*).+$")


def stack_file_text(ctx: ServerContext, stack: str) -> str:
    text = (ctx.root / f"Pulumi.{require_stack(ctx.root, stack)}.yaml").read_text(encoding="utf-8")
    return ctx.redactor.text(_SECURE_VALUE.sub(r"\1[encrypted]", text))


def newest_report(ctx: ServerContext, suffix: str) -> Path:
    """The most recent bench report with this suffix, from the tool's runs or the CLI's default folder."""
    candidates = [path for path in (ctx.root / "bench-results").rglob(f"*{suffix}") if path.is_file()]
    if not candidates:
        raise ResourceError(f"no bench report ({suffix}) yet under bench-results/: run the bench tool first")
    return max(candidates, key=lambda path: path.stat().st_mtime)


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
        return ctx.redactor.text(newest_report(ctx, ".md").read_text(encoding="utf-8"))

    @server.resource(
        "bench://latest/chart.png",
        name="latest-bench-chart",
        description="The newest benchmark chart (PNG): throughput and latency against concurrency, per context.",
        mime_type="image/png",
    )
    def latest_chart() -> bytes:
        return newest_report(ctx, ".png").read_bytes()
