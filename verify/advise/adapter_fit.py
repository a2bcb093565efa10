"""LoRA adapters as a constraint of `advise`: how many a deployment serves, their rank, and their share of traffic.

Why its own module: a coding assistant with three team-trained adapters asked `advise` for the cheapest 12B
deployment and got a TPU stack, which then refuses adapters. A row can serve adapters only where the stack it
would be does: on a platform that loads them (Cloud Run GPU with the bucket mounted, GKE GPU fleets; not
vllm-tpu, docs/adapters.md), within vLLM's LoRA sizes (`--max-loras`, `--max-lora-rank`), and with the GPU memory
of the LoRA slots taken from the KV cache. So the adapters are declared in the synthetic stack `stacks.fit` loads
for each row (``Workload.adapter_ranks``): the loader's refusals are the row's "cannot serve them", and the
capacity plan's reservation is in the batch the row is ranked at. This module says what the user asked for, the
one model a workload description reads (``AdapterWorkload``), and what each ranked row then reserves.
"""

from __future__ import annotations

import pydantic

from serving.catalog import CatalogModel
from serving.lora import MAX_GPU_SLOTS, LoraLimits, derive_lora_limits, lora_buffer_bytes, rank_choices
from serving.units import GIB
from verify import UsageError

# A stack's own bound (stacks/adapters.py MAX_ADAPTERS): more adapters than the most GPU slots vLLM is asked for
# would evict each other on every replica.
MAX_ADAPTERS = MAX_GPU_SLOTS
# What a LoRA of a team-trained assistant usually is when the user does not say (PEFT's examples use 8-16).
DEFAULT_RANK = 16
# The refusal kind `advise` counts rows under when the stack loader refuses their adapters.
CANNOT_SERVE = "cannot serve the adapters (platform, or vLLM's LoRA sizes)"


class AdapterWorkload(pydantic.BaseModel):
    """LoRA adapters a deployment must serve on its base model: how many, their (largest) rank, and the share of
    requests that name one (the rest ask the base). A workload description (`advise`'s flags, the MCP tool, a
    workload file) holds one of these; each adapter is taken at ``rank``."""

    model_config = pydantic.ConfigDict(frozen=True, extra="forbid")

    count: int = pydantic.Field(ge=1, le=MAX_ADAPTERS)
    rank: int = pydantic.Field(default=DEFAULT_RANK, ge=1)
    share: float = pydantic.Field(default=1.0, gt=0, le=1)

    @pydantic.field_validator("rank")
    @classmethod
    def _rank_vllm_takes(cls, value: int) -> int:
        largest = rank_choices()[-1]
        if value > largest:
            raise ValueError(f"rank {value} is above vLLM's largest --max-lora-rank {largest}")
        return value

    @property
    def ranks(self) -> tuple[int, ...]:
        """One rank per adapter: what the synthetic stack declares (``stacks.fit.Workload.adapter_ranks``)."""
        return (self.rank,) * self.count

    @property
    def limits(self) -> LoraLimits:
        """The LoRA sizes a stack serving them derives (serving/lora.py): the flags each ranked row runs with."""
        return derive_lora_limits(self.ranks)

    def describe(self) -> str:
        return f"{self.count} LoRA adapter(s) of rank {self.rank} on {self.share:.0%} of requests"


def reserved_bytes(adapters: AdapterWorkload, model: CatalogModel) -> int:
    """GPU bytes vLLM sets aside for the adapters' slots on one replica of this model: the capacity plan's own
    estimate (stacks/capacity.py counts the same with the runtime overhead)."""
    return lora_buffer_bytes(model.text_config, adapters.limits)


def caveat(adapters: AdapterWorkload, model: CatalogModel) -> str:
    """What a ranked row's answer assumes about its adapters, for its caveats."""
    limits = adapters.limits
    return (
        f"serves {adapters.describe()}: --max-loras {limits.gpu_slots} --max-lora-rank {limits.max_rank}, "
        f"{reserved_bytes(adapters, model) / GIB:.2f} GiB a replica for the slots, taken from the KV cache"
    )


def notes(adapters: AdapterWorkload | None) -> list[str]:
    """The report's line about the adapters (none without): what was ruled out for them, and what `--write`
    leaves to the user."""
    if adapters is None:
        return []
    text = (
        f"{adapters.describe()}: only rows whose stack serves them are ranked (TPU stacks and `model.load: stream` "
        "serve none, docs/adapters.md), each with the LoRA slots' memory in its capacity plan; the latency "
        "estimate does not model LoRA's own kernels or an adapter's first load on a replica (measure with "
        "`gemma-verify bench` against an adapter's name); a stack written with --write declares no adapters: add "
        "them under gemma-serving:adapters"
    )
    return [text]


def adapter_workload(count: int | None, rank: int | None, share: float | None) -> AdapterWorkload | None:
    """``--adapters N --adapter-rank R --adapter-share F`` (and the MCP tool's same three) as one value; None
    without adapters. UsageError naming the flag: a rank or share without a count, or a value out of bounds."""
    if count is None:
        if rank is not None or share is not None:
            raise UsageError("--adapter-rank and --adapter-share describe adapters: give --adapters N as well")
        return None
    values: dict[str, object] = {"count": count}
    if rank is not None:
        values["rank"] = rank
    if share is not None:
        values["share"] = share
    try:
        return AdapterWorkload.model_validate(values)
    except pydantic.ValidationError as error:
        flags = {"count": "--adapters", "rank": "--adapter-rank", "share": "--adapter-share"}
        problems = []
        for problem in error.errors():
            field = str(problem["loc"][0]) if problem["loc"] else "count"
            problems.append(f"{flags.get(field, '--adapters')} {values.get(field)}: {problem['msg']}")
        raise UsageError("; ".join(problems)) from None
