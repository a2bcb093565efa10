"""`verify query`: flags, the prompt's source (argument, file or stdin), the live answer and the summary.

The answer is printed as it streams (reasoning, when shown, dimmed and labelled before it), then one
summary line of numbers; ``--json`` prints one document instead, for machines (the MCP tool).
Exit codes: 0 answered, 1 the request failed (the summary says how and the likely cause), 2 usage
error, unreachable or unauthorised.
"""

from __future__ import annotations

import argparse
import stat
import sys
from pathlib import Path
from typing import TextIO

from remote.text import escape_controls
from verify import UsageError
from verify.argtypes import non_negative_number, positive_int
from verify.endpoint import resolve_target
from verify.endpoint.cli import add_target_arguments, target_options, timeout_options
from verify.numbers import readable
from verify.query.run import DEFAULT_MAX_TOKENS, QueryOptions, QueryReport, ReasoningDisplay, run_query
from verify.streaming import TextCallback

STDIN = "-"
# The largest prompt read, in bytes: above the longest context of the catalog's models (262,144 tokens at a few
# bytes each) with room to spare, and small enough that `--prompt-file /dev/zero` or a runaway pipe is refused
# with a message instead of filling the memory.
MAX_PROMPT_BYTES = 4 * 1024 * 1024


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``verify query`` to the CLI."""
    parser = subparsers.add_parser(
        "query",
        help="ask an endpoint one prompt, streamed, with TTFT, tokens/s and usage",
        description="Send one prompt as a streamed chat completion; print the answer as it arrives, then "
        "TTFT, output tokens/s, usage (prompt, completion, reasoning tokens), finish reason and the model "
        "that answered. Exit codes: 0 answered, 1 the request failed, 2 usage error or endpoint "
        "unreachable/unauthorised.",
    )
    add_target_arguments(parser)
    parser.add_argument("prompt", nargs="?", metavar="PROMPT", help=f"the prompt ({STDIN!r}: read it from stdin)")
    parser.add_argument("--prompt-file", type=Path, metavar="PATH", help="read the prompt from this file")
    parser.add_argument("--system", metavar="TEXT", help="a system message before the prompt")
    parser.add_argument(
        "--max-tokens",
        type=positive_int("--max-tokens"),
        default=DEFAULT_MAX_TOKENS,
        metavar="N",
        help=f"most output tokens, reasoning included (default {DEFAULT_MAX_TOKENS})",
    )
    parser.add_argument(
        "--temperature", type=non_negative_number("--temperature"), metavar="T", help="sampling temperature"
    )
    parser.add_argument(
        "--reasoning",
        choices=[choice.value for choice in ReasoningDisplay],
        default=ReasoningDisplay.SHOW.value,
        help="print the model's reasoning or not (its tokens are counted either way; default show)",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON document instead of streaming")
    parser.set_defaults(handler=run_query_command)


def read_prompt(args: argparse.Namespace, stdin: TextIO | None = None) -> str:
    """The prompt from exactly one of PROMPT, PROMPT='-' (stdin) or --prompt-file, at most MAX_PROMPT_BYTES."""
    given: str | None = args.prompt
    path: Path | None = args.prompt_file
    if (given is None) == (path is None):
        raise UsageError("give the prompt as PROMPT, as '-' to read stdin, or with --prompt-file PATH (exactly one)")
    if path is not None:
        text = read_prompt_file(path)
    elif given == STDIN:
        text = (stdin or sys.stdin).read(MAX_PROMPT_BYTES + 1)
        if len(text.encode("utf-8")) > MAX_PROMPT_BYTES:
            raise UsageError(f"the prompt on stdin is longer than {_size(MAX_PROMPT_BYTES)}; give a shorter one")
    else:
        text = str(given)
    if not text.strip():
        raise UsageError("the prompt is empty")
    return text


def read_prompt_file(path: Path, limit: int = MAX_PROMPT_BYTES) -> str:
    """A regular file's text, at most ``limit`` bytes.

    Why the checks come before the read: ``/dev/zero`` (a character device) has no end and filled the memory,
    and a FIFO nobody writes to blocked the command for ever. Only a regular file is opened, its size is
    checked first, and the read itself stops one byte past the limit in case the file grew in between.
    """
    flag = f"--prompt-file {str(path)!r}"
    try:
        found = path.stat()
    except OSError as exc:
        raise UsageError(f"{flag} cannot be read as UTF-8 text: {exc}") from None
    if not stat.S_ISREG(found.st_mode):
        raise UsageError(f"{flag} is not a regular file (a device, FIFO or directory); give a text file")
    if found.st_size > limit:
        raise UsageError(f"{flag} is {_size(found.st_size)}, above the {_size(limit)} a prompt may be")
    try:
        with path.open("rb") as handle:
            data = handle.read(limit + 1)
    except OSError as exc:
        raise UsageError(f"{flag} cannot be read as UTF-8 text: {exc}") from None
    if len(data) > limit:
        raise UsageError(f"{flag} grew above the {_size(limit)} a prompt may be while it was read")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UsageError(f"{flag} cannot be read as UTF-8 text: {exc}") from None


def _size(count: int) -> str:
    return f"{count / (1024 * 1024):.1f} MiB" if count >= 1024 * 1024 else f"{count} bytes"


def query_options(args: argparse.Namespace, prompt: str) -> QueryOptions:
    """``verify query``'s flags as options (the target flags, ``--model`` included, are resolved apart)."""
    return QueryOptions(
        prompt=prompt,
        max_tokens=args.max_tokens,
        temperature=args.temperature,
        system=args.system,
        reasoning=ReasoningDisplay(args.reasoning),
        timeouts=timeout_options(args),
        api_key_env=args.api_key_env,
    )


def run_query_command(args: argparse.Namespace) -> int:
    prompt = read_prompt(args)
    target = resolve_target(target_options(args))
    options = query_options(args, prompt)
    on_text = None if args.json else live_printer(sys.stdout, options.reasoning)
    report = run_query(target, options, on_text=on_text)
    if args.json:
        print(report.model_dump_json(indent=2))
    else:
        print_summary(report, sys.stdout)
    return report.exit_code


def live_printer(out: TextIO, display: ReasoningDisplay) -> TextCallback:
    """Print text as it arrives: reasoning (when shown) under a 'reasoning:' label, then the answer."""
    state = {"section": ""}

    def take(text: str, is_reasoning: bool) -> None:
        if is_reasoning and display is ReasoningDisplay.HIDE:
            return
        section = "reasoning" if is_reasoning else "answer"
        if state["section"] != section:
            if state["section"]:
                out.write("\n")
            if is_reasoning or state["section"]:
                out.write(f"[{section}]\n")
            state["section"] = section
        # The model's text is the server's: a control sequence in it must not drive the terminal.
        out.write(escape_controls(text))
        out.flush()

    return take


def print_summary(report: QueryReport, out: TextIO) -> None:
    """The numbers after the answer; on failure what went wrong and its likely cause.

    The served model's name, the finish reason and the failure's detail are the server's text: each line is
    escaped whole (newlines too), so an answer cannot forge or restyle the summary after it.
    """
    usage = (
        f"usage: prompt {readable(report.prompt_tokens)}, completion {readable(report.completion_tokens)}"
        f", reasoning {readable(report.reasoning_tokens, missing='not reported')}"
    )
    timing = (
        f"TTFT {readable(report.ttft_ms)} ms, {readable(report.output_tokens_per_s)} output tok/s after the "
        f"first ({readable(report.tokens_per_s_overall)} overall), end-to-end {readable(report.e2e_ms)} ms"
    )
    served = report.served_model or "not named"
    lines = [timing, usage, f"finish reason {report.finish_reason or '-'}, model {served}"]
    if report.note:
        lines.append(f"note: {report.note}")
    if report.failure is not None:
        status = f" (HTTP {report.status})" if report.status is not None else ""
        lines.append(f"FAILED: {report.failure}{status}: {report.failure_detail}")
        lines.append(f"likely cause: {report.cause}")
    out.write("\n\n" + "".join(escape_controls(line, keep_newlines=False) + "\n" for line in lines))
