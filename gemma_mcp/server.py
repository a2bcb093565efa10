"""Build the MCP server: the read-only tools always, the cloud-changing ones only when allowed."""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer

from gemma_mcp import (
    resources,
    tools_adapters,
    tools_advise,
    tools_changes,
    tools_live,
    tools_memory,
    tools_models,
    tools_ops,
    tools_stacks,
    tools_verify,
)
from gemma_mcp.context import ServerContext
from gemma_mcp.guard import GuardedServer

INSTRUCTIONS = """\
gemma-serving deploys Gemma 4 on vLLM to Google Cloud (Cloud Run GPUs, a TPU VM or a GKE fleet), one Pulumi
stack per deployment, and proves each rollout serves. Start with `stacks` to learn the stack names; `plan` and `fit`
are offline and free; `advise` ranks the cheapest model, variant, shape and replica count for a workload and an
SLO (offline); `preflight` checks the project before `pulumi up`; `status` and `logs` say what a
deployment is doing and why it fails; `outputs`, `health` and `bench` read a deployed stack or an endpoint;
`query` asks one prompt with TTFT and tokens/s, `metrics` reads vLLM's live counters and latency histograms,
`models` lists the model bucket's imports, `memory` sets vLLM's start-up memory lines beside the plan;
`compare` reads two bench results files. Tools that change the cloud exist only when the server was started with
--allow-changes, and then require confirm=<stack name>. Results never contain secret values."""


def build_server(ctx: ServerContext) -> MCPServer:
    server: MCPServer = GuardedServer("gemma-serving", instructions=INSTRUCTIONS)
    tools_stacks.register(server, ctx)
    tools_verify.register(server, ctx)
    tools_live.register(server, ctx)
    tools_adapters.register(server, ctx)
    tools_ops.register(server, ctx)
    tools_models.register(server, ctx)
    tools_memory.register(server, ctx)
    tools_advise.register(server, ctx)
    resources.register(server, ctx)
    if ctx.allow_changes:
        tools_changes.register(server, ctx)
    return server
