"""Run the real program under Pulumi's mocks and capture every resource registration and the exports.

Why a capture rather than assertions on component attributes: the plan, the tests and the policy checks
all read what the engine would receive (type, name, parent, inputs in wire form), so nothing a
component does on the side can escape them.
"""

from __future__ import annotations

import contextlib
import runpy
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pulumi
from pulumi.runtime import mocks as pulumi_mocks

from preview import pulumi_sdk
from preview.pulumi_sdk import SECRET_SIGNATURE, UNKNOWN

__all__ = ["SECRET_SIGNATURE", "UNKNOWN", "Capture", "CapturedResource", "install_mocks", "run_program"]


@dataclass
class CapturedResource:
    """One resource as the engine would receive it."""

    type: str
    name: str
    parent: str | None
    inputs: dict[str, Any]
    urn: str
    # URNs the resource waits for (depends_on, with components expanded to their children).
    dependencies: tuple[str, ...] = ()
    # Resource options that decide what `pulumi destroy` does with it (kept in the cloud, or refused).
    retain_on_delete: bool = False
    protect: bool = False
    # Former identities the engine should match in state instead of replacing (`aliases=`), each as
    # `field=value` pairs of the SDK's alias spec, e.g. `name=<old name> parentUrn=<old parent>`.
    aliases: tuple[str, ...] = ()
    # Properties whose changes the engine leaves alone (`ignore_changes=`), e.g. a gated GKE fleet's serving
    # track keeps its template until promoted.
    ignore_changes: tuple[str, ...] = ()


@dataclass
class Capture:
    resources: list[CapturedResource] = field(default_factory=list)
    outputs: dict[str, Any] = field(default_factory=dict)
    logs: list[tuple[str, str]] = field(default_factory=list)

    def of_type(self, type_token: str) -> list[CapturedResource]:
        """The resources of one type, by name: registration order varies from run to run (a resource
        registers once its inputs resolve), and the plan must read the same every time."""
        return sorted((r for r in self.resources if r.type == type_token), key=lambda r: (r.name, r.urn))

    def one(self, type_token: str) -> CapturedResource:
        found = self.of_type(type_token)
        if len(found) != 1:
            raise AssertionError(f"expected one {type_token}, found {len(found)}")
        return found[0]


class UnansweredInvokeError(RuntimeError):
    """The program asked the provider something the offline plan has no answer for."""


# What the offline plan assumes the stack's last update exported (deploy/rollout_state.py reads it back): a
# revision already serves, so a gated stack's plan shows the next update, candidate at 0%. It is a
# placeholder, not a name: the offline plan has no state. Tests pass their own (e.g. {} for a first rollout).
OFFLINE_STACK_STATE: dict[str, Any] = {"servingRevision": "<serving revision in the stack's state>"}


class OfflineMocks(pulumi_mocks.Mocks):
    """Echo inputs as outputs (like a preview of new resources) and answer the invokes we use."""

    def __init__(self, project: str, stack_state: dict[str, Any] | None = None) -> None:
        self.project = project
        self.stack_state = OFFLINE_STACK_STATE if stack_state is None else stack_state

    def new_resource(self, args: pulumi_mocks.MockResourceArgs) -> tuple[str | None, dict[str, Any]]:
        if args.typ == "pulumi:pulumi:StackReference":
            # The stack reading its own outputs (a read, so the recording monitor does not list it).
            return args.name, {"name": args.inputs.get("name"), "outputs": dict(self.stack_state)}
        state = dict(args.inputs)
        if args.typ == "gcp:serviceaccount/account:Account" and "accountId" in state:
            state["email"] = f"{state['accountId']}@{self.project}.iam.gserviceaccount.com"
        return f"{args.name}-id", state

    def call(self, args: pulumi_mocks.MockCallArgs) -> tuple[dict[str, Any], list[tuple[str, str]] | None]:
        # The failures list must be a list: the SDK's mock monitor iterates it (None crashes the invoke).
        token = args.token
        if token == "gcp:organizations/getClientConfig:getClientConfig":  # noqa: S105 - an invoke name
            return {
                "accessToken": "offline-preview-no-token",
                "project": self.project,
                "region": "",
                "zone": "",
                "id": "offline",
            }, []
        if token == "gcp:organizations/getProject:getProject":  # noqa: S105 - an invoke name
            return {"projectId": self.project, "number": "000000000000", "name": self.project}, []
        if token == "gcp:container/getCluster:getCluster":  # noqa: S105 - an invoke name
            # A GKE stack on an existing cluster reads it; offline, its address is a placeholder, not a host.
            return {
                "name": args.args.get("name"),
                "location": args.args.get("location"),
                "endpoint": "existing-cluster-endpoint.invalid",
                "masterAuths": [{"clusterCaCertificate": ""}],
            }, []
        raise UnansweredInvokeError(
            f"the offline plan has no answer for the invoke {token!r}; add one to preview/capture.py"
        )


def _keys_sorted(value: Any) -> Any:  # noqa: ANN401 - any deserialized input
    """Inputs with every mapping's keys in sorted order. The wire form is a protobuf Struct, whose map
    order differs between protobuf releases (5 and 6 disagree), and a plan must read the same in every
    environment, CI's and a laptop's."""
    if isinstance(value, dict):
        return {key: _keys_sorted(value[key]) for key in sorted(value)}
    if isinstance(value, list):
        return [_keys_sorted(item) for item in value]
    return value


class RecordingMonitor(pulumi_mocks.MockMonitor):
    """A mock monitor that also remembers each registration's type, name, parent and inputs."""

    def __init__(self, mocks: pulumi_mocks.Mocks, capture: Capture) -> None:
        super().__init__(mocks)
        self.capture = capture

    def RegisterResource(self, request: Any) -> Any:  # noqa: ANN401, N802 - the engine's gRPC method
        response = super().RegisterResource(request)  # type: ignore[no-untyped-call]
        if request.type != "pulumi:pulumi:Stack":
            inputs = _keys_sorted(pulumi_sdk.deserialize_properties(request.object))
            self.capture.resources.append(
                CapturedResource(
                    type=request.type,
                    name=request.name,
                    parent=request.parent or None,
                    inputs=inputs,
                    urn=response.urn,
                    dependencies=tuple(request.dependencies),
                    retain_on_delete=bool(request.retainOnDelete),
                    protect=bool(request.protect),
                    aliases=(*request.aliasURNs, *(_alias_text(alias) for alias in request.aliases)),
                    ignore_changes=tuple(request.ignoreChanges),
                )
            )
        return response


def _alias_text(alias: Any) -> str:  # noqa: ANN401 - the SDK's generated protobuf message
    """An alias spec as `field=value` pairs, in the order the SDK's message declares its fields."""
    spec = alias.spec
    return " ".join(f"{descriptor.name}={value}" for descriptor, value in spec.ListFields())


class _LogEngine(pulumi_mocks.MockEngine):
    def __init__(self, capture: Capture) -> None:
        super().__init__(None)
        self.capture = capture

    def Log(self, request: Any) -> None:  # noqa: ANN401, N802 - the engine's gRPC method
        severity = {0: "debug", 1: "info", 2: "warning", 3: "error"}.get(int(request.severity), "info")
        self.capture.logs.append((severity, str(request.message)))


def install_mocks(
    *,
    project: str,
    stack: str,
    config: dict[str, str],
    secret_keys: list[str] | None = None,
    stack_state: dict[str, Any] | None = None,
) -> Capture:
    """Replace the Pulumi engine in-process with recording mocks (a preview, like `pulumi preview`).

    ``stack_state`` is what the stack's last update exported (default ``OFFLINE_STACK_STATE``).
    """
    capture = Capture()
    mocks = OfflineMocks(project=config.get("gcp:project", "offline"), stack_state=stack_state)
    pulumi_sdk.reset_options()
    pulumi_mocks.set_mocks(mocks, project=project, stack=stack, preview=True, monitor=RecordingMonitor(mocks, capture))
    pulumi_sdk.set_engine(_LogEngine(capture))
    pulumi_sdk.skip_source_positions()
    pulumi_sdk.set_all_config(config, secret_keys or [])
    return capture


def run_registrations(body: Callable[[], object], capture: Capture) -> Capture:
    """Run `body` (which registers resources) to completion and collect the stack's exports."""

    def program() -> None:
        body()

    # The SDK's own test driver runs programs this way.
    pulumi_sdk.sync_await(pulumi_sdk.run_pulumi_func(program))
    root = pulumi_sdk.root_resource()
    exports: dict[str, Any] = getattr(root, "outputs", {}) or {}
    # Sorted like the inputs: resolved outputs pass through the same Struct wire form.
    for key in sorted(exports):
        capture.outputs[key] = _keys_sorted(pulumi_sdk.sync_await(_resolve(exports[key])))
    return capture


def run_program(
    program: Path,
    *,
    project: str,
    stack: str,
    config: dict[str, str],
    secret_keys: list[str],
    stack_state: dict[str, Any] | None = None,
) -> Capture:
    """Execute `program` (the real `__main__.py`) as a preview under mocks and return what it registered."""
    capture = install_mocks(
        project=project, stack=stack, config=config, secret_keys=secret_keys, stack_state=stack_state
    )

    def body() -> None:
        with _as_the_cli_runs(program.parent):
            runpy.run_path(str(program), run_name="__main__")

    return run_registrations(body, capture)


@contextlib.contextmanager
def _as_the_cli_runs(project_dir: Path) -> Iterator[None]:
    """Run the program from its project folder with that folder importable, as Pulumi's Python host does.

    Why: `python -m preview --root <checkout>` started from any other folder (docs/, a CI step elsewhere)
    would otherwise fail to import the program's own packages (`deploy`, `components`).
    """
    sys.path.insert(0, str(project_dir))
    try:
        with contextlib.chdir(project_dir):
            yield
    finally:
        sys.path.remove(str(project_dir))


async def _resolve(value: Any) -> Any:  # noqa: ANN401 - any exported value
    output = pulumi.Output.from_input(value)
    known = await output.is_known()
    if not known:
        return UNKNOWN
    resolved = await output.future()
    if await output.is_secret():
        return {SECRET_SIGNATURE: "1b47061264138c4ac30d75fd1eb44270", "value": resolved}
    return resolved
