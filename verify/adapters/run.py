"""`gemma-verify adapters` as functions: what the server has loaded, and whether one adapter really answers.

Why a check of its own: an adapter that failed to load answers 404 or 400 only when a user names it, and an
adapter whose weights are all zeros (or that vLLM silently served as the base) answers like the base. So
`check` sends the adapter's own probes under its name and under the base at temperature 0, and passes only
when the adapter answers under its name, differs from the base on at least one probe, and contains every
expected substring. Probes come from the stack file (`adapters[].probes`) or `--prompt`.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple, Protocol

import httpx
import pydantic

from remote.text import escape_controls
from serving.adapter_versions import split_versioned
from serving.lora_shapes import LayerShapes
from verify import UsageError
from verify.adapters.tensors import AdapterFiles, LocalFiles, TensorCheck, check_tensors, shapes_of_local_model
from verify.discovery import AnswerError, served_models
from verify.endpoint import EndpointOptions, Target
from verify.prom import MetricsParseError, samples_by_name
from verify.reach import Reach, endpoint_client
from verify.stack_settings import load_settings
from verify.streaming import StreamRequest, measure_stream

LORA_INFO = "vllm:lora_requests_info"
# vLLM's --max-loras as the label writes it: a small whole number.
_SLOTS = re.compile(r"[0-9]{1,6}")
DEFAULT_PROBE = "In one sentence, what do you help with?"
PROBE_MAX_TOKENS = 64


class Probe(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(frozen=True, extra="forbid")

    prompt: str = pydantic.Field(min_length=1)
    expect: str | None = None


class DeclaredAdapter(pydantic.BaseModel):
    """An adapter as the stack file declares it (or as `--adapter`/`--prompt` name it)."""

    model_config = pydantic.ConfigDict(frozen=True, extra="forbid")

    name: str
    probes: tuple[Probe, ...] = ()


class AdaptersOptions(EndpointOptions):
    max_tokens: int = pydantic.Field(default=PROBE_MAX_TOKENS, ge=1, le=4096)


class LoadedAdapter(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(frozen=True, extra="forbid")

    name: str
    base: str | None
    path: str | None


class AdapterListing(pydantic.BaseModel):
    """What the server lists (base models and loaded adapters), what it runs now, and what the stack declares."""

    model_config = pydantic.ConfigDict(frozen=True, extra="forbid")

    base_url: str
    base_models: list[str]
    # Each base model's folder on the server (/v1/models `root`): where a local check finds its config.json.
    base_roots: dict[str, str] = pydantic.Field(default_factory=dict)
    loaded: list[LoadedAdapter]
    running: list[str]
    waiting: list[str]
    gpu_slots: int | None
    declared: list[str]
    note: str | None = None

    @pydantic.computed_field  # type: ignore[prop-decorator]
    @property
    def not_loaded_yet(self) -> list[str]:
        """Declared adapters the server has not loaded: normal before their first request (they load by name)."""
        loaded = {adapter.name for adapter in self.loaded}
        return [name for name in self.declared if name not in loaded]


class ProbeOutcome(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(frozen=True, extra="forbid")

    prompt: str
    adapter_answer: str
    base_answer: str
    answered_as: str | None
    expect: str | None
    problems: list[str]


class AdapterCheckReport(pydantic.BaseModel):
    # extra="ignore": read back from `--json` inside a promotion's report, which carries the computed fields.
    model_config = pydantic.ConfigDict(frozen=True, extra="ignore")

    adapter: str
    base: str
    probes: list[ProbeOutcome]
    problems: list[str]
    # The version that answered (for a public name, the one the route table names now).
    served_as: str | None = None
    # The loaded adapter's config and tensors against the model (verify/adapters/tensors.py); None: not run.
    tensors: TensorCheck | None = None

    @pydantic.computed_field  # type: ignore[prop-decorator]
    @property
    def passed(self) -> bool:
        return not self.problems

    @pydantic.computed_field  # type: ignore[prop-decorator]
    @property
    def exit_code(self) -> int:
        return 0 if self.passed else 1


def list_adapters(
    target: Target, options: EndpointOptions, declared: Sequence[str] = (), *, reach: Reach | None = None
) -> AdapterListing:
    """What ``target`` lists under /v1/models and reports in vllm:lora_requests_info."""

    async def listed() -> AdapterListing:
        async with endpoint_client(target, options, reach) as client:
            return await read_listing(client, target.base_url, declared)

    return asyncio.run(listed())


async def read_listing(client: httpx.AsyncClient, base_url: str, declared: Sequence[str]) -> AdapterListing:
    try:
        models = await served_models(client)
    except AnswerError as exc:
        raise UsageError(
            f"GET {exc.path} failed ({exc.problem.value}): cannot list what the server has loaded"
        ) from None
    base = [card.id for card in models.data if card.parent is None]
    roots = {card.id: card.root for card in models.data if card.parent is None and card.root}
    loaded = [LoadedAdapter(name=card.id, base=card.parent, path=card.root) for card in models.data if card.parent]
    running, waiting, slots, note = await _lora_metrics(client)
    return AdapterListing(
        base_url=base_url,
        base_models=base,
        base_roots=roots,
        loaded=loaded,
        running=running,
        waiting=waiting,
        gpu_slots=slots,
        declared=list(declared),
        note=note,
    )


async def _lora_metrics(client: httpx.AsyncClient) -> tuple[list[str], list[str], int | None, str | None]:
    """The newest vllm:lora_requests_info sample: adapters running and waiting now, and the GPU slots."""
    try:
        response = await client.get("/metrics")
        samples = samples_by_name(response.text) if response.status_code == 200 else {}
    except (httpx.HTTPError, MetricsParseError) as exc:
        return [], [], None, f"/metrics unreadable ({type(exc).__name__}); adapter activity not shown"
    series = samples.get(LORA_INFO, [])
    if not series:
        return [], [], None, f"the server exports no {LORA_INFO} (LoRA off, or no request yet)"
    labels, _ = max(series, key=lambda sample: sample[1])  # the value is the sample's time

    def names(key: str) -> list[str]:
        return [name for name in labels.get(key, "").split(",") if name]

    return names("running_lora_adapters"), names("waiting_lora_adapters"), _slots(labels.get("max_lora", "")), None


def _slots(label: str) -> int | None:
    """``max_lora`` as a count; None for anything but a few ASCII digits (``str.isdigit`` takes ``²``, which
    ``int`` refuses: a server's label crashed `adapters list`)."""
    return int(label) if _SLOTS.fullmatch(label) else None


class TensorLocator(Protocol):
    """Where an answering adapter version's files are, and the model's shapes to hold them to."""

    def locate(self, served_as: str, adapter_root: str | None, base_root: str | None) -> TensorPlace | None: ...


class TensorPlace(NamedTuple):
    files: AdapterFiles
    shapes: LayerShapes | None
    shapes_from: str | None
    rank: int | None = None


class LocalTensors:
    """A server on this machine: the folders /v1/models lists as the adapter's and the model's roots."""

    def locate(self, served_as: str, adapter_root: str | None, base_root: str | None) -> TensorPlace | None:
        del served_as
        if not adapter_root or not Path(adapter_root).is_dir():
            return None
        shapes, source = shapes_of_local_model(base_root)
        return TensorPlace(LocalFiles(Path(adapter_root)), shapes, source)


def check_adapter(
    target: Target,
    options: AdaptersOptions,
    adapter: DeclaredAdapter,
    *,
    base_model: str | None = None,
    reach: Reach | None = None,
    tensors: TensorLocator | None = None,
) -> AdapterCheckReport:
    """Send ``adapter``'s probes under its name and under the base model, then hold the version that answered
    to the model's shapes (``tensors``: where its files are; default: a server on this machine)."""

    async def checked() -> AdapterCheckReport:
        async with endpoint_client(target, options, reach) as client:
            base = base_model or target.model or await the_base(client)
            report = await probe_adapter(client, adapter, base=base, max_tokens=options.max_tokens)
            return await with_tensor_check(client, report, tensors or LocalTensors())

    return asyncio.run(checked())


async def with_tensor_check(
    client: httpx.AsyncClient, report: AdapterCheckReport, locator: TensorLocator
) -> AdapterCheckReport:
    """The report with the tensor check of the version that answered (as /v1/models lists it once loaded)."""
    served_as = report.served_as
    if served_as is None:
        return report
    listing = await read_listing(client, "", ())
    adapter_root = next((card.path for card in listing.loaded if card.name == served_as), None)
    base_root = listing.base_roots.get(report.base)
    place = locator.locate(served_as, adapter_root, base_root)
    if place is None:
        note = f"the files of {served_as} are not reachable from here (give --stack, or run beside the server)"
        checked = TensorCheck(where=adapter_root, files=[], tensors=0, shapes_from=None, problems=[], note=note)
    else:
        checked = check_tensors(
            place.files, name=served_as, rank=place.rank, shapes=place.shapes, shapes_from=place.shapes_from
        )
    problems = [*report.problems, *(f"tensors: {problem}" for problem in checked.problems[:8])]
    if len(checked.problems) > 8:
        problems.append(f"tensors: and {len(checked.problems) - 8} more")
    return report.model_copy(update={"tensors": checked, "problems": problems})


async def the_base(client: httpx.AsyncClient) -> str:
    """The one base model the server lists (UsageError when it lists several: name it with --model)."""
    listing = await read_listing(client, "", ())
    if len(listing.base_models) != 1:
        raise UsageError(f"the server lists base models {listing.base_models}; pass --model BASE")
    return listing.base_models[0]


async def probe_adapter(
    client: httpx.AsyncClient, adapter: DeclaredAdapter, *, base: str, max_tokens: int
) -> AdapterCheckReport:
    probes = adapter.probes or (Probe(prompt=DEFAULT_PROBE),)
    outcomes = [await _probe(client, adapter.name, base, probe, max_tokens) for probe in probes]
    problems = [f"probe {index + 1}: {problem}" for index, o in enumerate(outcomes) for problem in o.problems]
    if outcomes and all(o.adapter_answer == o.base_answer and not o.problems for o in outcomes):
        problems.append(
            f"{adapter.name} answered every probe exactly as the base {base} did at temperature 0: the adapter "
            "changes nothing (zero weights, or served as the base)"
        )
    answered = sorted({o.answered_as for o in outcomes if o.answered_as and answers_as(adapter.name, o.answered_as)})
    served_as = answered[0] if len(answered) == 1 else None
    if len(answered) > 1:
        problems.append(f"{adapter.name} answered as {answered}: more than one version within one check")
    return AdapterCheckReport(adapter=adapter.name, base=base, probes=outcomes, problems=problems, served_as=served_as)


def answers_as(asked: str, answered: str | None) -> bool:
    """Whether an answer came from what was asked: the same name, or for a public adapter name one of its
    versions (the route table rewrites `support-bot` to `support-bot@v4`, and the answer says which)."""
    if answered == asked:
        return True
    versioned = split_versioned(answered or "")
    return versioned is not None and split_versioned(asked) is None and versioned[0] == asked


async def _probe(client: httpx.AsyncClient, name: str, base: str, probe: Probe, max_tokens: int) -> ProbeOutcome:
    extra = {"temperature": 0}
    mine = await measure_stream(
        client, StreamRequest(model=name, prompt=probe.prompt, max_tokens=max_tokens, extra_body=extra)
    )
    theirs = await measure_stream(
        client, StreamRequest(model=base, prompt=probe.prompt, max_tokens=max_tokens, extra_body=extra)
    )
    problems: list[str] = []
    if mine.failure is not None:
        status = f" (HTTP {mine.failure.status})" if mine.failure.status else ""
        problems.append(
            f"{name} did not answer{status}: {escape_controls(mine.failure.detail or mine.failure.kind.value)}"
        )
    elif not answers_as(name, mine.model):
        problems.append(f"asked for {name}, the answer came from {escape_controls(str(mine.model))}")
    if theirs.failure is not None:
        problems.append(f"the base {escape_controls(base)} did not answer, so nothing to compare with")
    if mine.failure is None and probe.expect is not None and probe.expect not in mine.text:
        problems.append(f"the answer does not contain {probe.expect!r}")
    return ProbeOutcome(
        prompt=probe.prompt,
        adapter_answer=escape_controls(mine.text),
        base_answer=escape_controls(theirs.text),
        answered_as=mine.model,
        expect=probe.expect,
        problems=problems,
    )


def declared_adapters(stack: str | None, root: Path | None = None) -> dict[str, DeclaredAdapter]:
    """The stack file's adapters with their probes (none without --stack)."""
    if stack is None:
        return {}
    settings = load_settings(stack, root)
    return {
        adapter.name: DeclaredAdapter(
            name=adapter.name, probes=tuple(Probe(prompt=p.prompt, expect=p.expect) for p in adapter.probes)
        )
        for adapter in settings.adapters
    }
