"""The resources: stack files without encrypted values, and the newest bench reports."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from tests.gemma_mcp.conftest import ROOT, connect, make_context, resource_text


async def test_stack_files_are_readable_with_encrypted_values_hidden(tmp_path: Path) -> None:
    """An agent may read a stack file's settings, but never the ciphertext of a `pulumi config set --secret`."""
    shutil.copy(ROOT / "Pulumi.yaml", tmp_path / "Pulumi.yaml")
    text = (ROOT / "Pulumi.l4.yaml").read_text(encoding="utf-8")
    (tmp_path / "Pulumi.l4.yaml").write_text(
        text + "  gemma-serving:hfToken:\n    secure: v1:AAAABBBBCCCCDDDD:EEEEFFFF\n", encoding="utf-8"
    )
    async with connect(make_context(root=tmp_path)) as client:
        listed = await client.list_resource_templates()
        read = await client.read_resource("stack://l4")
    assert any(template.uri_template == "stack://{name}" for template in listed.resource_templates)
    body = resource_text(read)
    assert "gemma-serving:accelerator: nvidia-l4" in body
    assert "secure: [encrypted]" in body
    assert "AAAABBBB" not in body


async def test_latest_bench_report_is_the_newest_one(tmp_path: Path) -> None:
    """The report resource must serve the newest Markdown, so an agent reads the run it just made."""
    shutil.copy(ROOT / "Pulumi.yaml", tmp_path / "Pulumi.yaml")
    results = tmp_path / "bench-results" / "mcp"
    results.mkdir(parents=True)
    (results / "old.md").write_text("# old", encoding="utf-8")
    (results / "new.md").write_text("# new", encoding="utf-8")
    os.utime(results / "old.md", (1, 1))
    async with connect(make_context(root=tmp_path)) as client:
        read = await client.read_resource("bench://latest/report.md")
    assert resource_text(read) == "# new"
