"""Which endpoint to check, and how to reach it: from a Pulumi stack's outputs or from a URL.

Why a resolved ``Target`` rather than raw flags: every subcommand (health, bench, compare) needs the
same facts (base URL, served name, auth kind, the limits the server was started with) and must get
them the same way, so a stack and a hand-typed URL lead to identical behaviour afterwards.

The stack outputs read here are the contract in docs/architecture.md ("Stack outputs").
"""

from __future__ import annotations

import enum
import itertools
import json
from urllib.parse import urlsplit

import pydantic

from serving.outputs import DeployedOutputs
from verify import UsageError
from verify.client import DEFAULT_CONNECT_TIMEOUT_S, DEFAULT_READ_TIMEOUT_S
from verify.pulumi_gateway import AutomationGateway, StackOutputsReader
from verify.streaming import default_deadline_s
from verify.url_guard import Resolve, UnsafeUrlError, check_url, resolve_host

# The environment variable vLLM itself reads its --api-key from; the natural place to keep it.
DEFAULT_API_KEY_ENV = "VLLM_API_KEY"


class AuthKind(enum.StrEnum):
    """How requests prove who they are; the values are what ``--auth`` accepts."""

    GOOGLE = "google"  # Cloud Run with IAM: a Google ID token whose audience is the service URL
    API_KEY = "api-key"  # vLLM's --api-key: a bearer key read from an environment variable
    NONE = "none"  # local servers and endpoints protected by the network alone


# The stack output `authKind` spells the Google case after the credential it needs.
_STACK_AUTH_KINDS: dict[str, AuthKind] = {
    "google-id-token": AuthKind.GOOGLE,
    "api-key": AuthKind.API_KEY,
    "none": AuthKind.NONE,
}


class Target(pydantic.BaseModel):
    """One endpoint to verify. ``model`` is None when nobody named it: the checks then use the one
    name ``/v1/models`` lists and say so. Limits are None when the source does not know them."""

    model_config = pydantic.ConfigDict(frozen=True, extra="forbid")

    base_url: str
    model: str | None
    auth_kind: AuthKind
    source: str
    api_key_secret: str | None = None
    platform: str | None = None
    accelerator: str | None = None
    max_model_len: int | None = None
    max_num_seqs: int | None = None
    concurrency: int | None = None
    max_instances: int | None = None
    # The ID token audience when it is not the URL called: a tagged revision URL
    # (https://candidate---<service host>) is called with a token for the service's own URL.
    audience_url: str | None = None
    # The stack's `billing` output (what is billed: GPU, CPU, memory, chips, provisioning model), which
    # verify bench prices with serving/pricing.py; None for --url and stacks that predate it.
    billing: dict[str, str | int | float | bool | None] | None = None
    # Draft tokens a step may add (the stack's --speculative-config; 0: none); None when unknown (--url).
    speculative_tokens: int | None = None

    @property
    def audience(self) -> str:
        """The Google ID token audience Cloud Run expects: the service URL, scheme and host only."""
        parts = urlsplit(self.audience_url or self.base_url)
        return f"{parts.scheme}://{parts.netloc}"

    @property
    def admission_limit(self) -> int | None:
        """Requests Cloud Run admits at once before answering 429 (concurrency x max instances)."""
        if self.concurrency is None or self.max_instances is None:
            return None
        return self.concurrency * self.max_instances


class TargetOptions(pydantic.BaseModel):
    """Which endpoint to check and how to prove who we are: the target and authentication flags, typed.

    Exactly one of ``stack`` (read the endpoint from that stack's outputs) or ``url``. ``auth`` None is
    automatic: the stack's authKind, or for a URL what ``target_from_url`` infers.
    """

    model_config = pydantic.ConfigDict(frozen=True, extra="forbid")

    stack: str | None = None
    url: str | None = None
    model: str | None = None
    auth: AuthKind | None = None
    # With google auth, the service URL the ID token is for when it differs from the URL called.
    audience: str | None = None
    # The environment variable holding vLLM's --api-key (None: DEFAULT_API_KEY_ENV with api-key auth).
    api_key_env: str | None = None
    # A `url` on a private or link-local address (never the metadata server): verify/url_guard.py.
    allow_private_url: bool = False

    @pydantic.model_validator(mode="after")
    def _one_source(self) -> TargetOptions:
        if (self.stack is None) == (self.url is None):
            raise ValueError("give exactly one of stack (a Pulumi stack name) or url (a base URL)")
        return self


class TimeoutOptions(pydantic.BaseModel):
    """How long a connection, a silence within one request and a whole request may take, in seconds."""

    model_config = pydantic.ConfigDict(frozen=True, extra="forbid")

    connect_s: float = pydantic.Field(default=DEFAULT_CONNECT_TIMEOUT_S, gt=0)
    read_s: float = pydantic.Field(default=DEFAULT_READ_TIMEOUT_S, gt=0)
    # None: read_s plus the slowest healthy time per output token asked for (verify/streaming.py).
    deadline_s: float | None = pydantic.Field(default=None, gt=0)

    def request_deadline_s(self, max_tokens: int) -> float:
        """``deadline_s``, or the default derived from ``read_s`` and the output tokens asked for."""
        return self.deadline_s if self.deadline_s is not None else default_deadline_s(max_tokens, self.read_s)


class EndpointOptions(pydantic.BaseModel):
    """What every command that sends requests to a target shares: its timeouts and the environment variable
    holding vLLM's --api-key (None: DEFAULT_API_KEY_ENV with api-key auth)."""

    model_config = pydantic.ConfigDict(frozen=True, extra="forbid")

    timeouts: TimeoutOptions = TimeoutOptions()
    api_key_env: str | None = None


def resolve_target(
    options: TargetOptions, *, pulumi: StackOutputsReader | None = None, resolve: Resolve = resolve_host
) -> Target:
    """Turn the target options into a ``Target``; raises ``UsageError`` for anything unusable, a URL the
    stack's credentials must not go to included (verify/url_guard.py; ``resolve`` looks names up)."""
    if options.stack is not None:
        target = target_from_stack(options.stack, pulumi=pulumi or AutomationGateway())
    else:
        target = target_from_url(
            str(options.url), model=options.model, auth=options.auth, api_key_env_given=options.api_key_env is not None
        )
        try:
            check_url(target.base_url, flag="--url", allow_private=options.allow_private_url, resolve=resolve)
        except UnsafeUrlError as exc:
            raise UsageError(str(exc)) from None
    return with_flag_overrides(target, options)


def with_flag_overrides(target: Target, options: TargetOptions) -> Target:
    """What the options say over what the stack exports: --model, --auth (unless auto) and --audience."""
    update: dict[str, object] = {}
    if options.model is not None:
        update["model"] = options.model
    if options.auth is not None:
        update["auth_kind"] = options.auth
    if options.audience is not None:
        update["audience_url"] = normalise_base_url(options.audience, flag="--audience")
    return target.model_copy(update=update) if update else target


def target_from_url(url: str, *, model: str | None, auth: AuthKind | None, api_key_env_given: bool) -> Target:
    """``auth`` None: automatic (google for https://*.run.app, api-key when a key variable is named, else none)."""
    base_url = normalise_base_url(url, flag="--url")
    kind = auth if auth is not None else _auto_auth_for_url(base_url, api_key_env_given)
    return Target(base_url=base_url, model=model, auth_kind=kind, source="url")


def target_from_stack(stack: str, *, pulumi: StackOutputsReader) -> Target:
    return target_from_outputs(stack, pulumi.outputs(stack).outputs)


# What reaching the server needs of a stack's outputs (every version of the program exported them).
_TARGET_OUTPUTS = ("endpoint", "servedModelName", "authKind")
# Every output a Target is made of.
_TARGET_READS = frozenset(
    {*_TARGET_OUTPUTS, "apiKeySecret", "platform", "accelerator", "maxModelLen", "maxNumSeqs", "concurrency"}
    | {"maxInstances", "billing"}
)


def target_from_outputs(stack: str, outputs: DeployedOutputs) -> Target:
    # What is missing of the three, and any output verify reads whose value it cannot take.
    problems = [problem for name in _TARGET_OUTPUTS if (problem := outputs.problem(name))]
    problems += [why for name, why in outputs.unreadable.items() if name in _TARGET_READS - set(_TARGET_OUTPUTS)]
    if outputs.endpoint is None or outputs.served_model_name is None or outputs.auth_kind is None or problems:
        raise UsageError(
            f"stack {stack!r} does not export what verify needs ({'; '.join(problems)}); expected outputs: "
            f"{', '.join(_TARGET_OUTPUTS)} (see docs/architecture.md)"
        )
    return Target(
        base_url=normalise_base_url(outputs.endpoint, flag=f"stack {stack!r} output endpoint"),
        model=outputs.served_model_name,
        auth_kind=_STACK_AUTH_KINDS[outputs.auth_kind],
        source=f"stack {stack}",
        api_key_secret=outputs.api_key_secret,
        platform=outputs.platform,
        accelerator=outputs.accelerator,
        max_model_len=outputs.max_model_len,
        max_num_seqs=outputs.max_num_seqs,
        concurrency=outputs.concurrency,
        max_instances=outputs.max_instances,
        billing=outputs.billing,
        speculative_tokens=speculative_tokens(outputs.vllm_args),
    )


def speculative_tokens(vllm_args: list[str] | None) -> int | None:
    """``num_speculative_tokens`` of the server's ``--speculative-config`` (0 without one); None when the
    arguments are unknown. The bench's decode ceiling allows a stream that many extra tokens a step."""
    if vllm_args is None:
        return None
    for flag, value in itertools.pairwise(vllm_args):
        if flag == "--speculative-config":
            try:
                config = json.loads(value)
            except ValueError:
                return None
            tokens = config.get("num_speculative_tokens") if isinstance(config, dict) else None
            return tokens if isinstance(tokens, int) else None
    return 0


def output_problems(exc: pydantic.ValidationError) -> str:
    """One line naming each stack output that is missing or malformed."""
    return "; ".join(
        f"{'.'.join(str(part) for part in error['loc']) or 'outputs'}: {error['msg']}" for error in exc.errors()
    )


def normalise_base_url(url: str, *, flag: str) -> str:
    """An http(s) URL without a trailing slash, so paths like ``/v1/models`` join cleanly."""
    parts = urlsplit(url.strip())
    if "@" in parts.netloc:
        # Never echoed: the part before @ is a user name and password.
        raise UsageError(
            f"{flag} must not carry user:password@ (credentials in a URL end up in logs and process lists); "
            "give the base URL and use --auth api-key with --api-key-env, or --auth google"
        )
    if parts.scheme not in {"http", "https"} or not parts.hostname:
        raise UsageError(f"{flag} must be an http:// or https:// URL with a host, got {url!r}")
    if parts.query or parts.fragment:
        raise UsageError(f"{flag} must be a base URL without ?query or #fragment, got {url!r}")
    try:
        port = parts.port
    except ValueError:
        port = 0  # urllib refuses ports above 65535 or that are not numbers
    if port == 0:
        raise UsageError(f"{flag} has a port outside 1-65535 (or not a number), got {url!r}")
    return f"{parts.scheme}://{parts.netloc}{parts.path}".rstrip("/")


def _auto_auth_for_url(base_url: str, api_key_env_given: bool) -> AuthKind:
    parts = urlsplit(base_url)
    host = parts.hostname or ""
    if parts.scheme == "https" and host.endswith(".run.app"):
        return AuthKind.GOOGLE
    if api_key_env_given:
        return AuthKind.API_KEY
    return AuthKind.NONE
