"""`gemma-verify adapters promote NAME`: gate one adapter version on the running service, then route its name.

Why a gate of its own: adding or swapping an adapter makes no new serving revision, so the revision
promotion never sees it, and vLLM would load a bad adapter on its first user request. Here the version is
first reached under its versioned name (`support-bot@v4`, its staging name: no user asks for it), checked as
`adapters check` checks (its probes answer as itself, unlike the base, with the expected text; its config
and tensors fit the model), and only then written into the route table as what `support-bot` means. A
failed gate writes nothing: the previous version keeps every request, and the report says why.

After the write each replica picks the table up within its refresh interval
(serving/adapter_routes_runtime.py); promote waits that long and asks the public name again, so a table
the replicas cannot read (a missing grant) is a failed promotion, not a silent one. The previous version's
folder stays in the bucket and answers under its versioned name: requests admitted before the switch
finish on it, and `--rollback` returns to it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

import pydantic

from remote.text import escape_controls
from serving.adapter_routes_runtime import ROUTES_REFRESH_S
from serving.adapter_versions import Route, versioned_name
from verify.adapters.routes import RouteConflictError, RouteStore
from verify.adapters.run import (
    AdapterCheckReport,
    AdaptersOptions,
    DeclaredAdapter,
    LocalTensors,
    Probe,
    TensorLocator,
    TensorPlace,
    probe_adapter,
    the_base,
    with_tensor_check,
)
from verify.endpoint import Target
from verify.reach import Reach, endpoint_client
from verify.streaming import StreamRequest, measure_stream

# After the write: the replicas' refresh interval and a margin for the read itself.
SETTLE_S = ROUTES_REFRESH_S + 5.0
# Requests sent to the public name after the switch, each of which must come from the new version.
CONFIRMATIONS = 3
CONFIRM_PROMPT = "Say hello."


class PromotionReport(pydantic.BaseModel):
    """What one promotion found and did (what `--json` prints)."""

    # extra="ignore": the MCP server reads `--json` back, and it carries the computed `exit_code`.
    model_config = pydantic.ConfigDict(frozen=True, extra="ignore")

    adapter: str
    version: str
    previous: str | None
    routes: str
    promoted: bool
    already_serving: bool = False
    check: AdapterCheckReport | None = None
    # The versions that answered the public name after the switch (each should be the new one).
    confirmed: list[str] = pydantic.Field(default_factory=list)
    problems: list[str] = pydantic.Field(default_factory=list)

    @pydantic.computed_field  # type: ignore[prop-decorator]
    @property
    def exit_code(self) -> int:
        return 1 if self.problems else 0


class PromotionsReport(pydantic.BaseModel):
    """One promotion per adapter (`--all` gates each declared adapter on its own)."""

    model_config = pydantic.ConfigDict(frozen=True, extra="forbid")

    promotions: list[PromotionReport]

    @pydantic.computed_field  # type: ignore[prop-decorator]
    @property
    def exit_code(self) -> int:
        return max((promotion.exit_code for promotion in self.promotions), default=0)


@dataclass(frozen=True)
class PromoteRequest:
    """One adapter to promote: the version to route its name to, and the probes its gate sends."""

    name: str
    version: str
    probes: tuple[Probe, ...] = ()
    rank: int | None = None
    rollback: bool = False


@dataclass(frozen=True)
class PromoteSeams:
    """What tests replace: time, the wait after the write, where the version's files are."""

    sleep: Callable[[float], None] = time.sleep
    clock: Callable[[], datetime] = lambda: datetime.now(tz=UTC)
    settle_s: float = SETTLE_S
    tensors: TensorLocator = field(default_factory=LocalTensors)
    reach: Reach | None = None


def promote_adapter(
    target: Target,
    options: AdaptersOptions,
    store: RouteStore,
    request: PromoteRequest,
    seams: PromoteSeams | None = None,
) -> PromotionReport:
    """Gate `request.version` on `target` under its versioned name; on a pass, route the public name to it."""
    seams = seams or PromoteSeams()
    table = store.read()
    current = table.routes.get(request.name)
    version = request.version
    if request.rollback:
        if current is None or current.previous is None:
            return _report(request, store, current, problems=[f"{request.name} has no previous version to go back to"])
        version = current.previous
    staged = versioned_name(request.name, version)
    if current is not None and current.version == version:
        return _report(request, store, current, version=version, already=True)
    check = _gate(target, options, DeclaredAdapter(name=staged, probes=request.probes), request.rank, seams)
    if not check.passed:
        serving = f"{request.name} still serves {current.version}" if current else f"{request.name} serves nothing yet"
        problems = [f"{staged} failed its gate; the route table is unchanged ({serving})", *check.problems]
        return _report(request, store, current, version=version, check=check, problems=problems)
    route = Route(version=version, previous=current.version if current else None, promoted_at=_now(seams))
    try:
        store.write(table.with_route(request.name, route))
    except RouteConflictError as error:
        problems = [f"{error}: another promotion moved it; run again to gate against the table as it is now"]
        return _report(request, store, current, version=version, check=check, problems=problems)
    seams.sleep(seams.settle_s)
    confirmed = _confirm(target, options, request.name, seams)
    problems = [
        f"the route table names {staged}, but {request.name} still answered as {escape_controls(answered)} after "
        f"{seams.settle_s:g} s: the replicas are not reading {store.location} (their log says 'adapter routes')"
        for answered in confirmed
        if answered != staged
    ]
    return PromotionReport(
        adapter=request.name,
        version=version,
        previous=route.previous,
        routes=store.location,
        promoted=True,
        check=check,
        confirmed=confirmed,
        problems=problems,
    )


def _now(seams: PromoteSeams) -> str:
    return seams.clock().astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _report(
    request: PromoteRequest,
    store: RouteStore,
    current: Route | None,
    *,
    version: str | None = None,
    already: bool = False,
    check: AdapterCheckReport | None = None,
    problems: list[str] | None = None,
) -> PromotionReport:
    return PromotionReport(
        adapter=request.name,
        version=version or request.version,
        previous=current.version if current else None,
        routes=store.location,
        promoted=False,
        already_serving=already,
        check=check,
        problems=problems or [],
    )


def _gate(
    target: Target, options: AdaptersOptions, adapter: DeclaredAdapter, rank: int | None, seams: PromoteSeams
) -> AdapterCheckReport:
    """`adapters check` of the staged version: probes, then its config and tensors."""

    async def checked() -> AdapterCheckReport:
        async with endpoint_client(target, options, seams.reach) as client:
            base = target.model or await the_base(client)
            report = await probe_adapter(client, adapter, base=base, max_tokens=options.max_tokens)
            return await with_tensor_check(client, report, _Ranked(seams.tensors, rank))

    return asyncio.run(checked())


@dataclass(frozen=True)
class _Ranked:
    """The locator, with the declared rank the tensors must have (the stack's, not the adapter's own config)."""

    inner: TensorLocator
    rank: int | None

    def locate(self, served_as: str, adapter_root: str | None, base_root: str | None) -> TensorPlace | None:
        place = self.inner.locate(served_as, adapter_root, base_root)
        return place._replace(rank=self.rank) if place is not None and self.rank is not None else place


def _confirm(target: Target, options: AdaptersOptions, name: str, seams: PromoteSeams) -> list[str]:
    """What answers the public name now: the model each of a few short requests came from."""

    async def asked() -> list[str]:
        answered: list[str] = []
        async with endpoint_client(target, options, seams.reach) as client:
            for _ in range(CONFIRMATIONS):
                result = await measure_stream(
                    client,
                    StreamRequest(model=name, prompt=CONFIRM_PROMPT, max_tokens=4, extra_body={"temperature": 0}),
                )
                failure = result.failure
                answered.append(
                    str(result.model) if failure is None else f"an error ({failure.status or failure.kind.value})"
                )
        return answered

    return asyncio.run(asked())
