"""The advise tool: `gemma-verify advise` as a client of its typed command (verify/advise), read-only.

It answers what the CLI prints, from the same ``run_advise``: the ranked deployments that meet an SLO at a load,
each number with its basis, and one line per kind of exclusion. Writing a stack file for a row is the CLI's
``--write`` (it changes the project); the agent passes the row to the user.
"""

from __future__ import annotations

import asyncio
from typing import Annotated

import pydantic
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult

from gemma_mcp.context import ServerContext
from gemma_mcp.tools_stacks import READ_ONLY, reply
from verify import UsageError
from verify.advise.adapter_fit import adapter_workload
from verify.advise.options import PROVISIONING, AdviseOptions, parse_lengths, parse_min_scores, parse_slo
from verify.advise.report import AdviseReport, render
from verify.advise.run import run_advise


def register(server: MCPServer, ctx: ServerContext) -> None:
    @server.tool(
        name="advise",
        annotations=READ_ONLY,
        description=(
            "Which Gemma 4 model, variant, accelerator shape and replica count is cheapest for a workload and an "
            "SLO: prompt_tokens and output_tokens a request (or lengths, a distribution 'P:O:SHARE,...', e.g. "
            "'2048:256:0.9,16384:512:0.1'); the load as users (concurrent, closed loop) or rate "
            "(requests/s); slo as KEY=VALUE strings (p95_ttft_ms, p95_tpot_ms, goodput in req/s); optional "
            "platforms (cloud-run, tpu, gke), region, provisioning (on-demand, spot, flex-start), models, variants, "
            "budget_usd_per_month and active_hours_per_month; reused_tokens (prompt tokens each request shares with "
            "earlier ones: a system prompt, the conversation so far; default 0) and distinct_prefixes (how many "
            "such prefixes are in play: 1 for one system prompt, the users for per-user histories); draft_tokens "
            "(MTP draft lengths to weigh, 0 = off; default [0, 2, 4]). By default the answer is the cheapest "
            "deployment of each model, best model first by its model card score, each row saying what it gives "
            "up and saves against the next better model; min_scores ('mmlu_pro=80', ...), models or one_ranking "
            "give one ranking, cheapest first. A batch job instead of users or rate: batch_requests within "
            "within_hours, runs_per_month (default 30): rows priced for the hours the job runs, spot and flex-start "
            "allowed unless provisioning says otherwise. Returns the rows with predicted TTFT/TPOT, $/1M input and "
            "output tokens, $/hour and $/month, each with its basis (measured or estimated by the latency model of "
            "docs/advisor.md, with its stated error), and what was excluded by kind. Offline: about a second, "
            "free; `gemma-verify advise --write NAME` writes a chosen row as a stack file. LoRA adapters every "
            "deployment must serve: adapters (a count), adapter_rank (default 16), adapter_share (the share of "
            "requests naming one, default 1): only rows whose stack serves them are ranked, their slots' memory "
            "in the plan."
        ),
    )
    async def advise(  # noqa: PLR0917 - MCP tools take their arguments by name; the signature is the schema
        prompt_tokens: int | None = None,
        output_tokens: int | None = None,
        users: int | None = None,
        rate: float | None = None,
        slo: list[str] | None = None,
        platforms: list[str] | None = None,
        region: str | None = None,
        provisioning: list[str] | None = None,
        models: list[str] | None = None,
        variants: list[str] | None = None,
        budget_usd_per_month: float | None = None,
        active_hours_per_month: float = 730.0,
        top: int = 10,
        lengths: str | None = None,
        reused_tokens: int = 0,
        distinct_prefixes: int = 1,
        draft_tokens: list[int] | None = None,
        adapters: int | None = None,
        adapter_rank: int | None = None,
        adapter_share: float | None = None,
        min_scores: list[str] | None = None,
        one_ranking: bool = False,
        batch_requests: int | None = None,
        within_hours: float | None = None,
        runs_per_month: float = 30.0,
    ) -> Annotated[CallToolResult, AdviseReport]:
        try:
            values: dict[str, object] = {
                "users": users,
                "rate": rate,
                "slo": parse_slo(list(slo or [])),
                "platforms": tuple(platforms or ()),
                "region": region,
                "provisioning": tuple(provisioning or (PROVISIONING if batch_requests is not None else ("on-demand",))),
                "batch_requests": batch_requests,
                "within_hours": within_hours,
                "runs_per_month": runs_per_month,
                "models": tuple(models or ()),
                "variants": tuple(variants or ()),
                "budget_usd_per_month": budget_usd_per_month,
                "active_hours_per_month": active_hours_per_month,
                "top": top,
                "reused_tokens": reused_tokens,
                "distinct_prefixes": distinct_prefixes,
                "draft_tokens": tuple(sorted(set(draft_tokens))) if draft_tokens else (0, 2, 4),
                "adapters": adapter_workload(adapters, adapter_rank, adapter_share),
                "min_scores": parse_min_scores(list(min_scores or [])),
                "one_ranking": one_ranking,
            }
            if lengths is not None:
                options = AdviseOptions.with_lengths(parse_lengths(lengths), **values)
            elif prompt_tokens is None or output_tokens is None:
                raise UsageError("advise needs prompt_tokens and output_tokens, or lengths")
            else:
                options = AdviseOptions.model_validate(
                    {**values, "prompt_tokens": prompt_tokens, "output_tokens": output_tokens}
                )
        except (pydantic.ValidationError, UsageError) as error:
            raise ToolError(str(error)) from None
        report = await asyncio.to_thread(run_advise, options)
        return reply(ctx, render(report), report)
