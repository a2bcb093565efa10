"""The resources: stack files without encrypted values, and the newest bench reports."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from mcp.shared.exceptions import MCPError

from tests.gemma_mcp.conftest import ROOT, connect, make_context, resource_text, text_of


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


def _project(tmp_path: Path) -> Path:
    shutil.copy(ROOT / "Pulumi.yaml", tmp_path / "Pulumi.yaml")
    shutil.copy(ROOT / "Pulumi.l4.yaml", tmp_path / "Pulumi.l4.yaml")
    (tmp_path / "bench-results" / "mcp").mkdir(parents=True)
    return tmp_path


SECRET_FILE_TEXT = "GOOGLE_CLIENT_SECRET=d-FL95Q19q7MQmFpd7hHD0Ty\nrefresh_token=1//0gLs-very-secret\n"


async def test_a_symlinked_report_to_the_environment_or_adc_is_never_served(tmp_path: Path) -> None:
    """A symlink under bench-results/ (a branch can carry one) to /proc/self/environ or an ADC file handed the
    agent the server's environment or a refresh token and client secret."""
    root = _project(tmp_path)
    secret = tmp_path / "application_default_credentials.json"
    secret.write_text(SECRET_FILE_TEXT, encoding="utf-8")
    (root / "bench-results" / "mcp" / "report.md").symlink_to(secret)
    (root / "bench-results" / "mcp" / "chart.png").symlink_to("/proc/self/environ")
    async with connect(make_context(root=root)) as client:
        for uri in ("bench://latest/report.md", "bench://latest/chart.png"):
            with pytest.raises(MCPError) as refused:
                await client.read_resource(uri)
            assert "no bench report" in str(refused.value)
            assert "refresh_token" not in str(refused.value)


async def test_a_symlinked_folder_under_bench_results_is_not_followed(tmp_path: Path) -> None:
    """The same through a folder: bench-results/mcp/x -> a directory holding a file named like a report."""
    root = _project(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "leak.md").write_text(SECRET_FILE_TEXT, encoding="utf-8")
    (root / "bench-results" / "mcp" / "x").symlink_to(elsewhere, target_is_directory=True)
    (root / "bench-results" / "mcp" / "real.md").write_text("# real", encoding="utf-8")
    os.utime(root / "bench-results" / "mcp" / "real.md", (1, 1))
    async with connect(make_context(root=root)) as client:
        read = await client.read_resource("bench://latest/report.md")
    assert resource_text(read) == "# real"


async def test_a_symlinked_stack_file_is_refused(tmp_path: Path) -> None:
    """stack://<name> must not read whatever a Pulumi.<name>.yaml symlink points at."""
    root = _project(tmp_path)
    secret = tmp_path / "secret.txt"
    secret.write_text(SECRET_FILE_TEXT, encoding="utf-8")
    (root / "Pulumi.leak.yaml").symlink_to(secret)
    async with connect(make_context(root=root)) as client:
        with pytest.raises(MCPError) as refused:
            await client.read_resource("stack://leak")
    assert "symbolic link" in str(refused.value)
    assert "refresh_token" not in str(refused.value)


def _commit(root: Path, path: Path) -> None:
    """Track `path` in a fresh repository at `root` (a sync helper: async tests must not block on processes)."""
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    subprocess.run(["git", "-C", str(root), "add", "-f", str(path)], check=True)


async def test_a_report_the_repository_tracks_is_not_the_latest_run(tmp_path: Path) -> None:
    """On a fresh clone bench://latest served a report committed from a developer's machine."""
    root = _project(tmp_path)
    committed = root / "bench-results" / "mcp" / "committed.md"
    committed.write_text("# someone else's run", encoding="utf-8")
    _commit(root, committed)
    async with connect(make_context(root=root)) as client:
        with pytest.raises(MCPError) as empty:
            await client.read_resource("bench://latest/report.md")
        assert "no bench report" in str(empty.value)
        (root / "bench-results" / "mcp" / "mine.md").write_text("# my run", encoding="utf-8")
        os.utime(root / "bench-results" / "mcp" / "mine.md", (1, 1))
        read = await client.read_resource("bench://latest/report.md")
    assert resource_text(read) == "# my run"


async def test_compare_refuses_a_results_file_reached_through_a_symlink(tmp_path: Path) -> None:
    """The compare tool refused paths outside the project; a symlink inside it must be refused too."""
    root = _project(tmp_path)
    (root / "bench-results" / "a.jsonl").symlink_to("/proc/self/environ")
    async with connect(make_context(root=root)) as client:
        result = await client.call_tool("compare", {"a": "bench-results/a.jsonl", "b": "bench-results/a.jsonl"})
    assert result.is_error
    assert "symbolic link" in text_of(result)


async def test_compare_in_a_results_folder_outside_the_root_keeps_the_same_guards(tmp_path: Path) -> None:
    """The bench results folder may lie outside the project: compare takes absolute paths inside it, but a
    symlink there (to the environment) and a path beside it (`../`) are refused as inside the root."""
    (tmp_path / "project").mkdir()
    root = _project(tmp_path / "project")
    results = tmp_path / "results"
    (results / "mcp").mkdir(parents=True)
    (results / "mcp" / "a.jsonl").symlink_to("/proc/self/environ")
    (tmp_path / "beside.jsonl").write_text("{}\n", encoding="utf-8")
    async with connect(make_context(root=root, results_dir=results)) as client:
        linked = str(results / "mcp" / "a.jsonl")
        through_link = await client.call_tool("compare", {"a": linked, "b": linked})
        escaping = str(results / ".." / "beside.jsonl")
        beside = await client.call_tool("compare", {"a": escaping, "b": escaping})
    assert through_link.is_error
    assert "outside the project root or reached through a symlink" in text_of(through_link)
    assert beside.is_error
    assert "outside" in text_of(beside)
