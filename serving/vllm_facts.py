"""What the vLLM release we target accepts on `vllm serve`, read from data this repository owns.

Why: the hand-made deployments failed at start-up on removed flags and misspelled choices; checking an
argument list against the recorded parser facts turns those 10-minute failed rollouts into a preview
error. The data was recorded from vLLM's own parser (see `serving/data/SOURCE.md`).
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from importlib import resources
from typing import Any

# Flags that older guides still use but that vLLM removed; the message says what replaced them.
REMOVED_FLAGS: dict[str, str] = {
    "--speculative-model": 'use --speculative-config \'{"method": ..., "model": ...}\'',
    "--num-speculative-tokens": 'use "num_speculative_tokens" inside --speculative-config',
    "--speculative-draft-tensor-parallel-size": 'use "draft_tensor_parallel_size" inside --speculative-config',
    "--use-v2-block-manager": "the v1 engine always uses it; drop the flag",
}


@dataclass(frozen=True)
class FlagFact:
    """One `vllm serve` option as vLLM's parser declares it."""

    flags: tuple[str, ...]
    dest: str
    takes_value: bool
    type_name: str | None
    choices: tuple[str, ...] | None


@dataclass(frozen=True)
class VllmFacts:
    """The recorded parser facts and name registries of one vLLM release."""

    release: str
    flags: dict[str, FlagFact]
    choices: dict[str, tuple[str, ...]]

    def flag(self, name: str) -> FlagFact | None:
        return self.flags.get(name)

    def names(self, registry: str) -> tuple[str, ...]:
        """Valid names of a registry such as `kv_cache_dtype` or `tool_call_parser`."""
        return self.choices.get(registry, ())


def _read_json(name: str) -> Any:  # noqa: ANN401 - raw JSON before it is typed below
    return json.loads(resources.files("serving.data").joinpath(name).read_text(encoding="utf-8"))


@functools.cache
def vllm_facts() -> VllmFacts:
    """Load the facts once per process (they are a few hundred small records)."""
    raw_flags = _read_json("vllm-0.32-serve-flags.json")
    flags: dict[str, FlagFact] = {}
    for entry in raw_flags["args"]:
        if "flags" not in entry:
            continue  # the positional model tag
        fact = FlagFact(
            flags=tuple(entry["flags"]),
            dest=entry["dest"],
            takes_value=bool(entry["takes_value"]),
            type_name=entry.get("type"),
            choices=tuple(str(c) for c in entry["choices"]) if entry.get("choices") else None,
        )
        for flag in fact.flags:
            flags[flag] = fact
    raw_choices = _read_json("vllm-0.32-choices.json")
    choices = {
        key: tuple(str(v) for v in value if v is not None)
        for key, value in raw_choices.items()
        if isinstance(value, list)
    }
    return VllmFacts(release=str(raw_flags["vllm_version"]), flags=flags, choices=choices)
