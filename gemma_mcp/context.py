"""What every tool needs, built once by `__main__` (or by a test, with fakes)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from gemma_mcp.load_slot import LoadSlot
from gemma_mcp.redact import Redactor
from gemma_mcp.runner import ModuleRunner
from remote.google_client import GoogleApis
from verify.ops.google import apis_from_environment
from verify.pulumi_gateway import PulumiGateway

# Where bench results live unless the server is given another folder: beside the stacks, as the CLI's.
BENCH_RESULTS = "bench-results"


@dataclass(frozen=True, slots=True)
class ServerContext:
    root: Path  # the project root: Pulumi.yaml and the stack files
    run_module: ModuleRunner
    pulumi: PulumiGateway
    redactor: Redactor
    # Tools that change cloud resources exist only when the server was started with --allow-changes.
    allow_changes: bool = False
    # health and bench may be pointed at any URL but the metadata server and link-local addresses
    # (--allow-any-url); otherwise at loopback and this project's stacks' endpoints only.
    allow_any_url: bool = False
    # Every `pulumi up` the server runs (deploy, weight import, promote's traffic steps) runs the policy
    # pack in <root>/policy, as the deploy workflow does, unless the server was started with --no-policy-pack.
    policy_pack: bool = True
    # Held by every call that loads an endpoint (bench, promote's bench gate): one at a time per server.
    load_slot: LoadSlot = field(default_factory=LoadSlot)
    # The Google client of preflight, status and logs: Application Default Credentials by default.
    google: Callable[[], GoogleApis] = field(default=apis_from_environment)
    # The bench results folder (the bench tool writes under <it>/mcp; the report resources and `compare` read
    # it); None: <root>/bench-results. Tests point it at a temporary folder so a run leaves the checkout alone.
    results_dir: Path | None = None

    @property
    def bench_results(self) -> Path:
        return self.results_dir if self.results_dir is not None else self.root / BENCH_RESULTS

    @property
    def bench_dir(self) -> Path:
        return self.bench_results / "mcp"
