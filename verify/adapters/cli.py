"""`gemma-verify adapters list|check NAME`: flags, the stack file's declared adapters, and the printed report.

Exit codes: 0 listed / the adapter passed, 1 the adapter failed its check, 2 usage error or unreachable.
"""

from __future__ import annotations

import argparse
import sys
from typing import TextIO

from remote.text import escape_controls
from verify import UsageError
from verify.adapters.run import (
    PROBE_MAX_TOKENS,
    AdapterCheckReport,
    AdapterListing,
    AdaptersOptions,
    DeclaredAdapter,
    Probe,
    check_adapter,
    declared_adapters,
    list_adapters,
)
from verify.argtypes import positive_int
from verify.endpoint import resolve_target
from verify.endpoint.cli import add_target_arguments, target_options, timeout_options


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``verify adapters`` to the CLI."""
    parser = subparsers.add_parser(
        "adapters",
        help="list the LoRA adapters a server has loaded, or check that one answers as itself",
        description="list: the base models and adapters the server lists, which run now (vLLM's "
        "lora_requests_info), and the stack's declared adapters not loaded yet (they load on their first "
        "request). check NAME: send the adapter's probes (from the stack file, or --prompt) under its name and "
        "under the base at temperature 0; it passes when it answers under its name, differs from the base and "
        "contains each probe's expected text. Exit codes: 0 pass, 1 the adapter failed, 2 usage or unreachable.",
    )
    parser.add_argument("action", choices=["list", "check"], help="what to do")
    parser.add_argument("name", nargs="?", metavar="NAME", help="the adapter to check (check only)")
    add_target_arguments(parser)
    parser.add_argument("--prompt", action="append", default=[], metavar="TEXT", help="a probe prompt (repeatable)")
    parser.add_argument("--expect", metavar="TEXT", help="text every --prompt answer must contain")
    parser.add_argument(
        "--max-tokens", type=positive_int("--max-tokens"), default=PROBE_MAX_TOKENS, metavar="N", help="per probe"
    )
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    parser.set_defaults(handler=run_adapters_command)


def run_adapters_command(args: argparse.Namespace) -> int:
    declared = declared_adapters(args.stack)
    target = resolve_target(target_options(args))
    options = AdaptersOptions(timeouts=timeout_options(args), api_key_env=args.api_key_env, max_tokens=args.max_tokens)
    if args.action == "list":
        if args.name is not None:
            raise UsageError("adapters list takes no NAME")
        listing = list_adapters(target, options, sorted(declared))
        print(listing.model_dump_json(indent=2) if args.json else render_listing(listing))
        return 0
    if args.name is None:
        raise UsageError("adapters check needs the adapter's NAME")
    adapter = chosen_adapter(args.name, declared, prompts=args.prompt, expect=args.expect, stack=args.stack)
    report = check_adapter(target, options, adapter)
    if args.json:
        print(report.model_dump_json(indent=2))
    else:
        print_check(report, sys.stdout)
    return report.exit_code


def chosen_adapter(
    name: str, declared: dict[str, DeclaredAdapter], *, prompts: list[str], expect: str | None, stack: str | None
) -> DeclaredAdapter:
    """The adapter to check: --prompt probes when given, else the stack file's; refused when --stack does not
    declare it (a typo would otherwise be 'checked' and fail with a 404)."""
    if stack is not None and name not in declared:
        raise UsageError(
            f"adapter {name!r} is not declared in stack {stack!r}; declared: {', '.join(declared) or 'none'}"
        )
    if prompts:
        return DeclaredAdapter(name=name, probes=tuple(Probe(prompt=p, expect=expect) for p in prompts))
    return declared.get(name, DeclaredAdapter(name=name))


def _shown(text: object) -> str:
    """A server's (or a stack file's) name on one line of the listing: controls and newlines as escapes."""
    return escape_controls(str(text), keep_newlines=False)


def render_listing(listing: AdapterListing) -> str:
    bases = ", ".join(_shown(name) for name in listing.base_models) or "none"
    lines = [f"{_shown(listing.base_url)}: base {bases}"]
    for adapter in listing.loaded:
        state = (
            "running" if adapter.name in listing.running else "waiting" if adapter.name in listing.waiting else "idle"
        )
        lines.append(f"  adapter {_shown(adapter.name)} on {_shown(adapter.base)}: loaded, {state}")
    lines += [
        f"  adapter {_shown(name)}: declared, not loaded yet (loads on its first request)"
        for name in listing.not_loaded_yet
    ]
    if listing.gpu_slots is not None:
        lines.append(f"  GPU slots (--max-loras): {listing.gpu_slots}")
    if listing.note:
        lines.append(f"  note: {_shown(listing.note)}")
    return "\n".join(lines)


def print_check(report: AdapterCheckReport, out: TextIO) -> None:
    verdict = "PASS" if report.passed else "FAIL"
    out.write(f"{verdict}: adapter {_shown(report.adapter)} on {_shown(report.base)}, {len(report.probes)} probe(s)\n")
    for index, probe in enumerate(report.probes, start=1):
        out.write(f"  probe {index}: {escape_controls(probe.prompt)[:80]!r}\n")
        out.write(f"    adapter: {probe.adapter_answer[:120]!r}\n    base:    {probe.base_answer[:120]!r}\n")
    for problem in report.problems:
        out.write(f"  problem: {_shown(problem)}\n")
