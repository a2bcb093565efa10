"""`gemma-verify adapters list|check|promote`: flags, the stack file's declared adapters, the printed report.

Exit codes: 0 listed / the adapter passed / promoted (or already serving), 1 the adapter failed its check or
its promotion gate, 2 usage error or unreachable.
"""

from __future__ import annotations

import argparse
import sys
from typing import TextIO

from remote.google_client import GoogleApis
from remote.text import escape_controls
from serving.adapter_routes_runtime import ADAPTER_NAME, split_versioned
from serving.outputs import DeployedOutputs
from verify import UsageError
from verify.adapters.promote import (
    SETTLE_S,
    PromoteRequest,
    PromoteSeams,
    PromotionReport,
    PromotionsReport,
    promote_adapter,
)
from verify.adapters.routes import store_at
from verify.adapters.run import (
    PROBE_MAX_TOKENS,
    AdapterCheckReport,
    AdapterListing,
    AdaptersOptions,
    DeclaredAdapter,
    LocalTensors,
    Probe,
    TensorLocator,
    check_adapter,
    list_adapters,
)
from verify.adapters.stack import DeclaredVersion, bucket_tensors, declared_versions, stack_settings
from verify.argtypes import positive_int
from verify.endpoint import Target, resolve_target, target_from_outputs, with_flag_overrides
from verify.endpoint.cli import add_target_arguments, target_options, timeout_options
from verify.ops.google import apis_from_environment
from verify.pulumi_gateway import AutomationGateway

ACTIONS = ("list", "check", "promote")


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``verify adapters`` to the CLI."""
    parser = subparsers.add_parser(
        "adapters",
        help="list the LoRA adapters a server has loaded, check that one answers as itself, or promote a version",
        description="list: the base models and adapters the server lists, which run now (vLLM's "
        "lora_requests_info), and the stack's declared adapters not loaded yet (they load on their first "
        "request). check NAME: send the adapter's probes (from the stack file, or --prompt) under its name and "
        "under the base at temperature 0; it passes when it answers under its name, differs from the base and "
        "contains each probe's expected text, and its config and tensors fit the model. promote NAME: check "
        "the new version under its versioned name NAME@VERSION on the running service, and only if it passes "
        "route NAME to it in the route table (docs/adapters.md); a failed gate leaves the previous version "
        "serving. Exit codes: 0 pass, 1 the adapter failed, 2 usage or unreachable.",
    )
    parser.add_argument("action", choices=ACTIONS, help="what to do")
    parser.add_argument(
        "name",
        nargs="?",
        metavar="NAME",
        help="check: the adapter (its public name, or NAME@VERSION for one version); promote: the adapter",
    )
    add_target_arguments(parser)
    parser.add_argument("--prompt", action="append", default=[], metavar="TEXT", help="a probe prompt (repeatable)")
    parser.add_argument("--expect", metavar="TEXT", help="text every --prompt answer must contain")
    parser.add_argument(
        "--max-tokens", type=positive_int("--max-tokens"), default=PROBE_MAX_TOKENS, metavar="N", help="per probe"
    )
    promote = parser.add_argument_group("promote")
    promote.add_argument(
        "--version", metavar="V", help="the version to route NAME to (default: the one the stack file declares)"
    )
    promote.add_argument("--all", action="store_true", help="promote every adapter the stack file declares")
    promote.add_argument("--rollback", action="store_true", help="route NAME back to the version it replaced")
    promote.add_argument(
        "--routes",
        metavar="URI",
        help="the route table: gs://BUCKET/OBJECT or a local file (default: the stack's adapterRoutes output)",
    )
    promote.add_argument(
        "--settle",
        type=float,
        default=SETTLE_S,
        metavar="S",
        help=f"seconds to wait after the write before asking the public name (default {SETTLE_S:g}: the "
        "replicas' refresh interval and a margin)",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    parser.set_defaults(handler=run_adapters_command)


def run_adapters_command(args: argparse.Namespace) -> int:
    options = AdaptersOptions(timeouts=timeout_options(args), api_key_env=args.api_key_env, max_tokens=args.max_tokens)
    if args.name is not None and not _adapter_like(args.name):
        raise UsageError(f"NAME {args.name!r}: an adapter name (lowercase letters, digits, '-'), or NAME@VERSION")
    if args.action == "promote":
        return run_promote_command(args, options)
    if args.action == "list":
        if args.name is not None:
            raise UsageError("adapters list takes no NAME")
        target, _outputs = _target_and_outputs(args)
        listing = list_adapters(target, options, sorted(_declared(args)))
        print(listing.model_dump_json(indent=2) if args.json else render_listing(listing))
        return 0
    if args.name is None:
        raise UsageError("adapters check needs the adapter's NAME")
    target, outputs = _target_and_outputs(args)
    known = {name: version.declared for name, version in _declared(args).items()}
    adapter = chosen_adapter(args.name, known, prompts=args.prompt, expect=args.expect, stack=args.stack)
    report = check_adapter(target, options, adapter, tensors=_tensors(args, outputs))
    if args.json:
        print(report.model_dump_json(indent=2))
    else:
        print_check(report, sys.stdout)
    return report.exit_code


def _adapter_like(name: str) -> bool:
    return bool(ADAPTER_NAME.match(name)) or split_versioned(name) is not None


def _declared(args: argparse.Namespace) -> dict[str, DeclaredVersion]:
    return declared_versions(stack_settings(args.stack)) if args.stack is not None else {}


def _target_and_outputs(args: argparse.Namespace) -> tuple[Target, DeployedOutputs | None]:
    """The endpoint, and with --stack the stack's outputs (read once: the route table's and bucket's names)."""
    if args.stack is None:
        return resolve_target(target_options(args)), None
    outputs = AutomationGateway().outputs(args.stack).outputs
    return with_flag_overrides(target_from_outputs(args.stack, outputs), target_options(args)), outputs


def _apis() -> GoogleApis:
    return apis_from_environment()


def _tensors(args: argparse.Namespace, outputs: DeployedOutputs | None) -> TensorLocator:
    """With --stack: each version's folder in the model bucket; else the folders beside a local server."""
    if args.stack is None or outputs is None:
        return LocalTensors()
    return bucket_tensors(_apis(), outputs.model_bucket, stack_settings(args.stack))


def run_promote_command(args: argparse.Namespace, options: AdaptersOptions) -> int:
    """Gate and route one adapter (or every declared one with --all); one report per adapter."""
    declared = _declared(args)
    names = _names_to_promote(args, declared)
    target, outputs = _target_and_outputs(args)
    location = args.routes or (outputs.adapter_routes if outputs is not None else None)
    if not location:
        raise UsageError(
            "promote needs the route table: --stack NAME of a stack that exports adapterRoutes, or --routes URI"
        )
    apis = _apis() if location.startswith("gs://") or args.stack is not None else None
    store = store_at(location, apis)
    seams = PromoteSeams(settle_s=max(0.0, args.settle), tensors=_tensors(args, outputs))
    reports = []
    for name in names:
        entry = declared.get(name)
        version = args.version or (entry.version if entry is not None else None)
        if version is None:
            raise UsageError(f"promote {name}: --version V is needed without --stack (the stack file names it)")
        probes = tuple(Probe(prompt=p, expect=args.expect) for p in args.prompt) or (entry.probes if entry else ())
        request = PromoteRequest(
            name=name, version=version, probes=probes, rank=entry.rank if entry else None, rollback=args.rollback
        )
        report = promote_adapter(target, options, store, request, seams)
        if not args.json:
            print_promotion(report, sys.stdout)
        reports.append(report)
    result = PromotionsReport(promotions=reports)
    if args.json:
        print(result.model_dump_json(indent=2))
    return result.exit_code


def _names_to_promote(args: argparse.Namespace, declared: dict[str, DeclaredVersion]) -> list[str]:
    if args.all:
        if args.name is not None or args.version is not None or args.rollback:
            raise UsageError(
                "--all promotes each declared adapter to its declared version: give no NAME, --version or --rollback"
            )
        if args.stack is None:
            raise UsageError("--all needs --stack (the stack file declares the adapters)")
        return sorted(declared)
    if args.name is None:
        raise UsageError("adapters promote needs the adapter's NAME (or --all)")
    if split_versioned(args.name) is not None:
        raise UsageError(f"promote takes the adapter's public name, not {args.name!r}: give the version with --version")
    if args.stack is not None and args.name not in declared:
        raise UsageError(
            f"adapter {args.name!r} is not declared in stack {args.stack!r}; declared: {', '.join(declared) or 'none'}"
        )
    return [args.name]


def chosen_adapter(
    name: str, declared: dict[str, DeclaredAdapter], *, prompts: list[str], expect: str | None, stack: str | None
) -> DeclaredAdapter:
    """The adapter to check: --prompt probes when given, else the stack file's (a version, NAME@VERSION, takes
    its adapter's); refused when --stack does not declare it (a typo would otherwise fail with a 404)."""
    parts = split_versioned(name)
    public = parts[0] if parts else name
    if stack is not None and public not in declared:
        raise UsageError(
            f"adapter {public!r} is not declared in stack {stack!r}; declared: {', '.join(declared) or 'none'}"
        )
    if prompts:
        return DeclaredAdapter(name=name, probes=tuple(Probe(prompt=p, expect=expect) for p in prompts))
    known = declared.get(public)
    return DeclaredAdapter(name=name, probes=known.probes if known else ())


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
    if report.tensors is not None:
        tensors = report.tensors
        shapes = f"against {tensors.shapes_from}" if tensors.shapes_from else "against the rank only"
        where = _shown(tensors.where or "?")
        out.write(f"  tensors: {tensors.tensors} in {len(tensors.files)} file(s) at {where}, {shapes}\n")
        if tensors.note:
            out.write(f"  note: {_shown(tensors.note)}\n")


def print_promotion(report: PromotionReport, out: TextIO) -> None:
    staged = f"{report.adapter}@{report.version}"
    if report.already_serving:
        out.write(f"ALREADY: {report.adapter} serves {report.version}; nothing to do\n")
        return
    verdict = "PROMOTED" if report.promoted and not report.problems else "REFUSED" if not report.promoted else "FAILED"
    previous = f" (was {report.previous})" if report.previous else " (its first version)"
    out.write(f"{verdict}: {report.adapter} -> {staged}{previous}; route table {report.routes}\n")
    if report.confirmed:
        out.write(f"  after the switch {report.adapter} answered as: {', '.join(map(_shown, report.confirmed))}\n")
    for problem in report.problems:
        out.write(f"  problem: {_shown(problem)}\n")
