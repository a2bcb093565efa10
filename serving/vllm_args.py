"""Check a `vllm serve` argument list against the recorded parser facts of the release we target.

Why: the settings render a typed model into arguments, but stacks may also add `extraArgs`; both must
be proven acceptable to vLLM before a rollout, not discovered in a crash loop. This mirrors what vLLM's
argparse does for the things that fail deployments: unknown or removed flags, values for flags that take
none, invalid choices, non-numeric numbers, and malformed `--speculative-config` JSON.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from serving.vllm_facts import REMOVED_FLAGS, FlagFact, VllmFacts, vllm_facts

_INT_TYPES = {"int", "human_readable_int"}
_FLOAT_TYPES = {"float"}
_JSON_FLAGS = {"--speculative-config", "-sc"}
# Flags vLLM's parser takes as free strings but the engine checks against a registry at start-up.
_REGISTRY_FLAGS = {"quantization": "quantization method", "load_format": "load format"}


def _check_value(flag: str, fact: FlagFact, value: str, facts: VllmFacts) -> list[str]:
    problems: list[str] = []
    if fact.choices is not None and value not in fact.choices:
        problems.append(f"{flag} {value!r}: vLLM {facts.release} accepts one of {', '.join(fact.choices)}")
    if fact.type_name in _INT_TYPES:
        try:
            int(value)
        except ValueError:
            problems.append(f"{flag} {value!r}: expected a whole number (write plain integers, not 4k)")
    elif fact.type_name in _FLOAT_TYPES:
        try:
            float(value)
        except ValueError:
            problems.append(f"{flag} {value!r}: expected a number")
    if flag in _JSON_FLAGS:
        problems.extend(check_speculative_config(value, facts))
    elif fact.dest == "tool_call_parser" and value not in facts.names("tool_call_parser"):
        problems.append(f"{flag} {value!r}: not a tool-call parser of vLLM {facts.release}")
    elif fact.dest == "reasoning_parser" and value not in facts.names("reasoning_parser"):
        problems.append(f"{flag} {value!r}: not a reasoning parser of vLLM {facts.release}")
    elif fact.dest in _REGISTRY_FLAGS and value not in facts.names(fact.dest):
        problems.append(
            f"{flag} {value!r}: not a {_REGISTRY_FLAGS[fact.dest]} of vLLM {facts.release}; allowed: "
            f"{', '.join(facts.names(fact.dest))}"
        )
    return problems


def check_speculative_config(value: str, facts: VllmFacts | None = None) -> list[str]:
    """Validate the JSON of `--speculative-config` the way vLLM's SpeculativeConfig would."""
    facts = facts or vllm_facts()
    try:
        config = json.loads(value)
    except json.JSONDecodeError as error:
        return [f"--speculative-config is not valid JSON ({error.msg} at column {error.colno})"]
    if not isinstance(config, dict):
        return ["--speculative-config must be a JSON object"]
    problems: list[str] = []
    known_keys = set(facts.names("speculative_config.keys"))
    unknown = sorted(set(config) - known_keys)
    if unknown:
        problems.append(f"--speculative-config has unknown keys {unknown}")
    method = config.get("method")
    if method is not None and method not in facts.names("speculative_config.method"):
        problems.append(f"--speculative-config method {method!r} is not one of vLLM {facts.release}'s methods")
    return problems


# Flags vLLM collects into a list, one value per occurrence (vLLM 0.32 vllm/entrypoints/openai/cli_args.py:
# "Special case: Middleware needs to append action"); every other flag's last occurrence silently wins.
APPENDED = frozenset({"middleware"})


def check_serve_args(args: Sequence[str], facts: VllmFacts | None = None) -> list[str]:
    """Return every problem in a `vllm serve` argument list (empty when vLLM would accept it)."""
    facts = facts or vllm_facts()
    problems: list[str] = []
    seen: set[str] = set()
    index = 0
    if args and not args[0].startswith("-"):
        index = 1  # the positional model tag
    while index < len(args):
        token = args[index]
        index += 1
        if not token.startswith("-"):
            problems.append(f"unexpected value {token!r} (every value must follow its flag)")
            continue
        flag, has_inline, inline_value = token.partition("=")
        fact = facts.flag(flag)
        if fact is None:
            hint = REMOVED_FLAGS.get(flag)
            if hint:
                problems.append(f"{flag} was removed from vLLM: {hint}")
            else:
                problems.append(f"{flag} is not a flag of vLLM {facts.release}'s `vllm serve`")
            continue
        if fact.dest in seen and fact.dest not in APPENDED:
            problems.append(f"{flag} is given more than once")
        seen.add(fact.dest)
        if not fact.takes_value:
            if has_inline:
                problems.append(f"{flag} takes no value")
            continue
        if has_inline:
            value = inline_value
        elif index < len(args) and not (args[index].startswith("--") or args[index] == "-sc"):
            value = args[index]
            index += 1
        else:
            problems.append(f"{flag} needs a value")
            continue
        problems.extend(_check_value(flag, fact, value, facts))
    return problems


def normalise_flags(args: Sequence[str]) -> tuple[str, ...]:
    """`--max_num_batched_tokens` as `--max-num-batched-tokens`: vLLM's parser accepts both spellings of a
    long flag (its FlexibleArgumentParser turns underscores in the flag name into dashes), so a stack may
    write either, and the plan shows the one spelling vLLM documents. Values are left untouched."""
    normalised = []
    for arg in args:
        name, equals, value = arg.partition("=")
        normalised.append(name.replace("_", "-") + equals + value if arg.startswith("--") else arg)
    return tuple(normalised)


def with_tensor_parallel(serve_args: Sequence[str], size: int) -> list[str]:
    """State the tensor-parallel size explicitly on TPU (one chip: 1), unless the arguments already do."""
    args = list(serve_args)
    if not any(arg == "--tensor-parallel-size" or arg.startswith("--tensor-parallel-size=") for arg in args):
        args += ["--tensor-parallel-size", str(size)]
    return args
