"""What every tool needs, built once by `__main__` (or by a test, with fakes)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from gemma_mcp.pulumi_gateway import PulumiGateway
from gemma_mcp.redact import Redactor
from gemma_mcp.runner import ModuleRunner
from verify.ops.google import GoogleApis, apis_from_environment


@dataclass(frozen=True, slots=True)
class ServerContext:
    root: Path  # the project root: Pulumi.yaml and the stack files
    run_module: ModuleRunner
    pulumi: PulumiGateway
    redactor: Redactor
    # Tools that change cloud resources exist only when the server was started with --allow-changes.
    allow_changes: bool = False
    # The Google client of preflight, status and logs: Application Default Credentials by default.
    google: Callable[[], GoogleApis] = field(default=apis_from_environment)

    @property
    def bench_dir(self) -> Path:
        return self.root / "bench-results" / "mcp"
