"""``advise --write NAME``: the chosen row as Pulumi.NAME.yaml, a stack `make preview STACK=NAME` plans.

Why through the stack file and not a template: the file is what the user reviews and commits; it carries the
catalog's model entry, the capacity the row was ranked with (max model length, max sequences), the instance
size or TPU placement it was priced at, and the revision the shipped stacks pin for that checkpoint. Where
none pins one, the all-zero placeholder the examples use, said so in the file: the import job refuses it, so
nothing deploys a revision nobody reviewed.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import yaml

from preview.stack_file import StackFileError, available_stacks, read_stack_config
from serving.catalog import catalog_model, pins_of
from serving.shapes import accelerator_facts, deployed_size
from verify import UsageError
from verify.advise.report import Row
from verify.advise.write_safety import (
    NOTHING_WRITTEN,
    PLACEHOLDER_REVISION,
    request_problems,
    row_problems,
    settings_problems,
    write_new,
)

__all__ = ["PLACEHOLDER_REVISION", "stack_document", "write_stack"]

GPU_IMAGE = "vllm/vllm-openai:v0.32.0"
TPU_IMAGE = "vllm/vllm-tpu:v0.32.0"


def pinned_revision(root: Path, model: str, variant: str) -> tuple[str, str] | None:
    """(revision, stack) of a stack file in ``root`` that serves this catalog checkpoint at a real commit."""
    for stack in available_stacks(root):
        try:
            values = read_stack_config(root, stack).values
        except StackFileError:
            continue
        raw = values.get("gemma-serving:model")
        if not raw:
            continue
        entry = yaml.safe_load(raw)
        if not isinstance(entry, dict):
            continue
        revision = str(entry.get("revision", ""))
        if entry.get("id") == model and entry.get("variant") == variant and revision.strip("0"):
            return revision, stack
    return None


def stack_document(row: Row, *, revision: str, drafter_revision: str | None = None) -> dict[str, Any]:
    """The stack's config, as `Pulumi.<stack>.yaml` holds it."""
    tpu = accelerator_facts(row.accelerator).family == "tpu"
    vllm: dict[str, Any] = {
        "maxModelLen": row.max_model_len,
        "maxNumSeqs": row.batch_cap,
        "kvCacheDtype": "fp8_e5m2" if row.platform == "tpu" else "fp8",
        "gpuMemoryUtilization": 0.9,
    }
    model: dict[str, Any] = {"id": row.model, "variant": row.variant, "revision": revision}
    if row.speculative_tokens:
        # The drafter the catalog pairs with the variant, at the draft length the row was estimated with.
        vllm["speculative"] = {"method": "mtp", "numSpeculativeTokens": row.speculative_tokens}
        model["drafterRevision"] = drafter_revision or recorded_drafter_revision(row)
    config: dict[str, Any] = {
        "gemma-serving:accelerator": row.accelerator,
        "gemma-serving:region": row.region,
        "gemma-serving:image": TPU_IMAGE if tpu else GPU_IMAGE,
        "gemma-serving:model": model,
        "gemma-serving:vllm": vllm,
    }
    if row.platform == "tpu":
        tier = {"on-demand": "guaranteed"}.get(row.provisioning, row.provisioning)
        provisioning: dict[str, Any] = {"model": tier}
        if row.batch_run_hours is not None and row.provisioning == "flex-start":
            # A batch row's run, with a quarter of slack (a flex-start node is deleted at its maxRunDuration).
            provisioning["maxRunDuration"] = f"{max(math.ceil(row.batch_run_hours * 1.25 * 60), 30)}m"
        config["gemma-serving:tpu"] = {"zone": row.zone, "acceleratorType": row.shape, "provisioning": provisioning}
    elif row.platform == "gke":
        # The fleet the row was priced as at its floor (the replicas that meet the SLO at the stated load, around
        # the clock), node GPUs / TP replicas on each; the autoscaler may grow to the peak's replicas.
        vllm["tensorParallelSize"] = row.tensor_parallel
        peak = max(row.peak_replicas or row.replicas, row.replicas)
        config["gemma-serving:gke"] = {
            "nodePool": {
                "machineType": row.shape,
                "zones": [row.zone],
                "provisioning": row.provisioning,
                "minNodes": row.billed_units,
                "maxNodes": max(row.billed_units, math.ceil(peak / max(row.replicas_per_unit, 1))),
            },
            "replicas": {"min": row.replicas, "max": peak},
        }
    else:
        size = deployed_size(row.accelerator)  # the instance the row was priced at
        config["gemma-serving:cloudRun"] = {
            "cpu": size.vcpu,
            "memoryGib": size.memory_gib,
            "minInstances": 0,
            "maxInstances": max(row.peak_replicas or row.replicas, row.replicas),
            "gpuZonalRedundancyDisabled": True,
        }
    if row.request_tokens:
        # The workload the row was ranked for: the preview's capacity block judges it, not a 512-token default.
        config["gemma-serving:capacity"] = {"requestTokens": min(row.request_tokens, row.max_model_len)}
    return {"config": config}


def _answer_lines(row: Row) -> list[str]:
    """What the stack's autoscaling and cold-start choices are, as the header says them."""
    lines = []
    peak = max(row.peak_replicas or row.replicas, row.replicas)
    if row.platform != "tpu" and peak > row.replicas:
        lines.append(
            f"#   autoscaling: {row.replicas} replica(s) meet the SLO at the stated load (priced at that floor); up to "
            f"{peak} for the peak (advise --peak-factor)"
        )
    if row.platform == "cloud-run":
        share = row.cold_start_share
        cold = f": {share:.1%} of requests meet a cold start at the workload's idle gaps" if share is not None else ""
        lines.append(
            f"#   minInstances 0 (scale to zero, as priced){cold}; set minInstances: {row.replicas} to keep them warm "
            "(billed every hour)"
        )
    if row.batch_run_hours is not None:
        lines.append(f"#   batch: {row.batch_run_hours:.2f} h a run, ${row.usd_per_run or 0:,.2f} a run")
    return lines


def recorded_drafter_revision(row: Row) -> str:
    """The commit the catalog records as pinned in public for the row's MTP drafter, else the placeholder."""
    entry = catalog_model(row.model)
    recorded = pins_of(entry.variant(row.variant).drafter)
    return recorded[0].revision if recorded else PLACEHOLDER_REVISION


def write_stack(
    root: Path,
    name: str,
    row: Row,
    *,
    revision: str | None = None,
    drafter_revision: str | None = None,
    force: bool = False,
    command: str | None = None,
) -> Path:
    """Write Pulumi.NAME.yaml in ``root`` for ``row`` (with its MTP drafter pinned at ``drafter_revision`` when
    the row drafts). UsageError, with nothing written, for a name or revision the preview refuses, a file that is
    not a new one of its own (verify/advise/write_safety.py), or settings the preview's loader refuses."""
    problems = request_problems(root, name, force=force, revision=revision, drafter=drafter_revision)
    problems += row_problems(row, revision=revision, drafter=drafter_revision)
    if problems:
        raise UsageError("; ".join(problems) + f"; {NOTHING_WRITTEN}")
    path = root / f"Pulumi.{name}.yaml"
    pinned = pinned_revision(root, row.model, row.variant)
    recorded = pins_of(catalog_model(row.model).variant(row.variant).repo)
    chosen = revision or (pinned[0] if pinned else recorded[0].revision if recorded else PLACEHOLDER_REVISION)
    if revision:
        origin = "the commit given with --revision"
    elif pinned:
        origin = f"the commit Pulumi.{pinned[1]}.yaml pins for this checkpoint"
    elif recorded:
        origin = f"the commit the catalog records as pinned in public ({recorded[0].source}); check it on the Hub"
    else:
        origin = (
            "PLACEHOLDER (all zeros): neither a stack here nor the catalog pins this checkpoint. Replace it with the "
            "40-hex commit you reviewed on the Hub: the preview refuses this one until you do"
        )
    header = [
        f"# Written by `{command or f'gemma-verify advise --write {name}'}`: rank {row.rank} of its answer.",
        f"# {row.model} {row.variant} on {row.shape} ({row.platform} {row.region}), {row.replicas} replica(s)"
        + (f" on {row.billed_units} node(s), tensor parallel {row.tensor_parallel}:" if row.platform == "gke" else ":"),
        (
            f"#   predicted p95 TTFT {row.p95_ttft_ms:,.0f} ms, TPOT {row.tpot_ms:,.1f} ms at "
            f"{row.requests_per_s:,.2f} req/s ({row.latency_basis.kind}; docs/advisor.md)"
        ),
        f"#   ${row.usd_per_hour:,.2f}/h, ${row.usd_per_month:,.0f}/month",
        *_answer_lines(row),
        f"# model.revision: {origin}.",
        "# gcp:project is not set here: `pulumi config set gcp:project <your-project-id>`.",
    ]
    if row.speculative_tokens:
        header.append(
            f"# MTP-{row.speculative_tokens}: model.drafterRevision pins the drafter "
            + ("given with --drafter-revision." if drafter_revision else "the catalog records, or the placeholder.")
        )
    body = yaml.safe_dump(stack_document(row, revision=chosen, drafter_revision=drafter_revision), sort_keys=False)
    text = "\n".join(header) + "\n" + body
    refused = settings_problems(root, name, text)
    if refused:
        raise UsageError(
            f"--write {name!r}: the preview would refuse {path.name}: " + "; ".join(refused) + f"; {NOTHING_WRITTEN}"
        )
    write_new(path, text, force=force)
    return path
