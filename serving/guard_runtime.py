"""The route guard inside every serving container: the routes the project serves, and nothing else of vLLM.

Why: vLLM 0.32's API key (its `VLLM_API_KEY`) guards only the `/v1`, `/v2`, `/inference` and `/cohere` prefixes
(vllm/entrypoints/serve/middleware/authenticate.py, GUARDED_PREFIX), while SageMaker's `/invocations`,
`/tokenize`, `/detokenize`, `/generative_scoring`, `/scale_elastic_ep`, `/load`, `/metrics` and, with dev mode,
`/server_info`, `/sleep`, `/collective_rpc`, `/update_weights` answer without it (vllm #58144, open; no flag
turns them off), and every release adds routes. So the guard is an allowlist: a request reaches vLLM only when
its method and exact path are one of `ROUTES`, carries the key where the route needs it, and names (in `model`)
the served model or an adapter the stack declares, before vLLM's filesystem LoRA resolver, which joins `model`
to its folder unchecked, ever sees the name.

Why ASGI middleware inside vLLM rather than a proxy in front of it: vLLM's `--middleware` installs it as the
outermost layer of vLLM's own app (vllm/entrypoints/serve/middleware/register.py adds user middleware last), so
the guard matches on exactly the path Starlette routes on (no second HTTP parser to disagree about `//`, `%2F`
or a trailing slash), it reads the JSON body with the same `json` module FastAPI parses it with, it adds no hop
and no container to streaming responses, and the same code runs on Cloud Run, the TPU VM and GKE. Envoy or
nginx would need a Lua/njs body filter of our own for the `model` check anyway. Pinned by being part of the
launch line: a change to this file is a new serving revision, shown in the plan.

This file runs inside the pinned vLLM image: standard library only, importing nothing of the project; the
launcher (serving/route_guard.py) embeds its text, registers it as `gemma_serving_guard` and runs vLLM's CLI
in the same process (the single API server, where `--middleware` is honoured).
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import json
import os
import re
import sys
from collections.abc import Awaitable, Callable, Iterable, Mapping, MutableMapping
from typing import Any

MODULE = "gemma_serving_guard"
MIDDLEWARE = MODULE + ".RouteGuard"
# Exit status when the guard refuses to start vLLM (EX_CONFIG): the container restarts and never serves open.
REFUSED_EXIT = 78
# Cloud Run's largest HTTP/1 request (cloud.google.com/run/quotas, "Maximum HTTP/1 request size": 32 MiB),
# used on every platform: the guard reads a body whole before vLLM does, and never more than this.
MAX_BODY_BYTES = 32 * 1024 * 1024

# Who may call a route: anyone who reaches the port (probes), key holders, or key holders and the metrics
# collectors (`scrapers` in the config says who they are on the platform).
OPEN = "open"
KEY = "key"
SCRAPE = "scrape"

# (method, exact path) -> (who may call it, whether its JSON body's `model` is checked). What the project
# serves: the OpenAI routes verify and clients use, /health for probes, /metrics for the collectors,
# /version and /tokenize for verify (discovery; bench's exact-length prompts and the quality check).
ROUTES: dict[tuple[str, str], tuple[str, bool]] = {
    ("GET", "/health"): (OPEN, False),
    ("GET", "/metrics"): (SCRAPE, False),
    ("GET", "/version"): (KEY, False),
    ("GET", "/v1/models"): (KEY, False),
    ("POST", "/v1/chat/completions"): (KEY, True),
    ("POST", "/v1/completions"): (KEY, True),
    ("POST", "/tokenize"): (KEY, True),
}

# Environment variables that change vLLM's routes, its auth or where it loads adapters or code from; refused in
# the stack settings (naming the key) and again here, at start, whatever set them. Sources: vLLM 0.32.0's
# vllm/envs.py and the modules named; model-hosting-container-standards 0.1.16 (vLLM's SageMaker layer).
REFUSED_ENV: dict[str, str] = {
    "VLLM_SERVER_DEV_MODE": "mounts /server_info, /reset_prefix_cache, /pause, /sleep, /collective_rpc, "
    "/update_weights and the RL routes, none behind the key (launchers/api_server/routers.py)",
    "VLLM_ALLOW_RUNTIME_LORA_UPDATING": "adds /v1/load_lora_adapter, /v1/unload_lora_adapter and SageMaker's "
    "/adapters and turns on the LoRA resolvers; the program sets it for a stack's declared adapters",
    "VLLM_LORA_RESOLVER_CACHE_DIR": "the folder vLLM's filesystem resolver loads any requested `model` from; the "
    "program points it at the bucket's adapters/ folder for declared adapters",
    "VLLM_LORA_RESOLVER_HF_REPO_LIST": "lets the Hugging Face resolver download adapters a request names",
    "VLLM_PLUGINS": "chooses which plugins load (LoRA resolvers, endpoint plugins that add routes)",
    "VLLM_API_KEY": "the server's API key: the program reads it from Secret Manager, never from plain env",
    "VLLM_SKIP_MODEL_NAME_VALIDATION": "serves any `model` name as the base model",
    "VLLM_ENABLE_COHERE_API": "mounts the /cohere routes",
    "VLLM_ENABLE_RESPONSES_API_STORE": "keeps responses server-side for later retrieval by id",
    "VLLM_USE_MODELSCOPE": "downloads a LoRA path that is not a local folder from ModelScope "
    "(vllm/lora/utils.py get_adapter_absolute_path)",
    "VLLM_DEBUG_LOG_API_SERVER_RESPONSE": "adds a middleware that logs every response body, prompts' answers "
    "included (vllm/entrypoints/serve/middleware/register.py)",
    "VLLM_USE_RUST_FRONTEND": "replaces vLLM's Python HTTP server, and so the route guard, with vllm-rs",
    "VLLM_RUST_FRONTEND_PATH": "names the HTTP server binary that replaces the Python one",
    "VLLM_USE_RUST_BENCH": "starts vllm-rs in place of the Python HTTP server",
    "FORWARDED_ALLOW_IPS": "makes uvicorn believe X-Forwarded-For, so a client chooses the address the guard sees",
    "PYTHONPATH": "puts other code before the image's vLLM and the guard",
    "PYTHONHOME": "replaces the image's Python libraries",
    "CUSTOM_PRE_PROCESS": "a SageMaker request transform that runs inside the guard, after its checks",
    "CUSTOM_POST_PROCESS": "a SageMaker response transform loaded from a file",
    "CUSTOM_SCRIPT_FILENAME": "the SageMaker handler script vLLM loads at start",
    "STORAGE_EMULATOR_HOST": "sends the adapter route table's reads (which version a name means) to another host",
    "GCE_METADATA_HOST": "sends the metadata-server token requests (the route table's credentials) to another host",
}
# Whole families: SageMaker's handler, middleware and transform loaders, its auto-installer and its settings.
REFUSED_ENV_PREFIXES: dict[str, str] = {
    "CUSTOM_FASTAPI_": "replaces SageMaker's /ping or /invocations handler or adds middleware from a file",
    "SAGEMAKER_": "configures vLLM's SageMaker layer (handler paths, sessions, transforms)",
    "STANDARD_": "lets SageMaker's layer pip-install requirements at start",
}
# What the program itself puts in the environment: the key (Secret Manager, on TPU and GKE) and, for declared
# adapters, the resolver pair (checked against the config's adapters folder).
API_KEY_ENV = "VLLM_API_KEY"
LORA_UPDATING_ENV = "VLLM_ALLOW_RUNTIME_LORA_UPDATING"
LORA_DIR_ENV = "VLLM_LORA_RESOLVER_CACHE_DIR"


def env_refusal(name: str) -> str | None:
    """Why an environment variable may not be set in a serving container, or None."""
    if name in REFUSED_ENV:
        return REFUSED_ENV[name]
    for prefix, why in REFUSED_ENV_PREFIXES.items():
        if name.startswith(prefix):
            return why
    return None


class GuardConfig:
    """What one server admits: its names, whether it holds a key, and who its metrics collectors are.

    JSON on the launch line (`names`, `key`: `required` or `none`, `scrapers`: `loopback` or `network`,
    `clients`: CIDRs, `adapters_dir`). `key: none` is Cloud Run's: IAM checks every caller at Google's front
    end and vLLM holds no key. `scrapers: loopback`: the collector runs beside vLLM (TPU VM); `network`: the
    pods' NetworkPolicy admits only the collectors besides `clients` (GKE), so a keyless /metrics is refused
    from a client range and answered elsewhere.
    """

    def __init__(self, data: Mapping[str, Any]) -> None:
        names = data.get("names")
        if not isinstance(names, list) or not names or not all(isinstance(n, str) and n for n in names):
            raise ValueError("guard config: names must be a non-empty list of model names")
        self.names = frozenset(names)
        self.key_required = _choice(data, "key", ("required", "none")) == "required"
        self.scrapers = _choice(data, "scrapers", ("loopback", "network"))
        clients = data.get("clients", [])
        if not isinstance(clients, list):
            raise ValueError("guard config: clients must be a list of CIDRs")
        self.clients = tuple(ipaddress.ip_network(str(cidr), strict=False) for cidr in clients)
        adapters_dir = data.get("adapters_dir")
        if adapters_dir is not None and not isinstance(adapters_dir, str):
            raise ValueError("guard config: adapters_dir must be a path or null")
        self.adapters_dir = adapters_dir
        # With adapters, `NAME@VERSION` of a declared name (an immutable version, serving/adapter_versions.py).
        self.versioned = bool(data.get("versioned", False))

    def answers(self, model: str) -> bool:
        """Whether `model` is a name this server answers: one of its names, or a version of one."""
        if model in self.names:
            return True
        name, at, version = model.partition("@")
        return self.versioned and bool(at) and name in self.names and bool(_VERSION_LABEL.match(version))

    def env_problems(self, environ: Mapping[str, str]) -> list[str]:
        """The refused variables present, except the ones the program sets itself (and set as it sets them)."""
        problems = []
        for name in sorted(environ):
            why = env_refusal(name)
            if why is None or name == API_KEY_ENV:
                continue
            if name == LORA_UPDATING_ENV and self.adapters_dir and environ[name] == "True":
                continue
            if name == LORA_DIR_ENV and self.adapters_dir and environ[name] == self.adapters_dir:
                continue
            problems.append(f"{name} is set: it {why}")
        return problems


# An adapter version's label (serving/adapter_routes_runtime.py's VERSION_LABEL, without `..`): never a path.
_VERSION_LABEL = re.compile(r"^(?!.*\.\.)[a-z0-9](?:[a-z0-9.-]{0,18}[a-z0-9])?$")


def _choice(data: Mapping[str, Any], key: str, allowed: tuple[str, ...]) -> str:
    value = data.get(key)
    if value not in allowed:
        raise ValueError(f"guard config: {key} {value!r}; allowed: {', '.join(allowed)}")
    return str(value)


_CONFIG: GuardConfig | None = None
_KEY_DIGEST: bytes | None = None


def configure(config: GuardConfig, api_key: str | None) -> None:
    """Set what the RouteGuard instances vLLM creates admit (the middleware takes no arguments)."""
    global _CONFIG, _KEY_DIGEST  # noqa: PLW0603 - vLLM instantiates the middleware class by import path
    if config.key_required and not (api_key or "").strip():
        raise ValueError(f"the server needs its API key and {API_KEY_ENV} is empty")
    _CONFIG = config
    _KEY_DIGEST = hashlib.sha256(api_key.encode()).digest() if config.key_required and api_key else None


Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]


class RouteGuard:
    """ASGI middleware: the allowlist, the key outside vLLM's guarded prefixes, and the `model` check."""

    def __init__(self, app: App) -> None:
        if _CONFIG is None:
            raise RuntimeError(f"{MODULE} was not configured: start vLLM through the gemma-serving launcher")
        self.app = app
        self.config = _CONFIG
        self.key_digest = _KEY_DIGEST

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope.get("type")
        if kind == "lifespan":
            await self.app(scope, receive, send)
        elif kind == "http":
            await self._http(scope, receive, send)
        else:
            # WebSockets (vLLM's /v1/realtime) are not served: closing before accept answers the handshake 403.
            await send({"type": "websocket.close", "code": 1008})

    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        route = ROUTES.get((str(scope.get("method", "")), str(scope.get("path", ""))))
        if route is None or scope.get("root_path"):
            await _answer(send, 403, "PermissionDenied", "this route is not served (gemma-serving's route guard)")
            return
        access, checks_model = route
        if not self._may_call(access, scope):
            await _answer(send, 401, "Unauthorized", "a valid API key is required (Authorization: Bearer <key>)")
            return
        if not checks_model:
            await self.app(scope, receive, send)
            return
        body = await _read_body(scope, receive, send)
        if body is None:
            return
        refusal = self._model_refusal(body)
        if refusal is None:
            await self.app(scope, _replay(body, receive), send)
            return
        status, kind_name, message = refusal
        await _answer(send, status, kind_name, message, param="model" if status == 404 else None)

    def _may_call(self, access: str, scope: Scope) -> bool:
        if access == OPEN or not self.config.key_required:
            return True
        if self._has_key(scope):
            return True
        if access != SCRAPE:
            return False
        client = _client_address(scope)
        if client is None:
            return False
        if client.is_loopback:
            return True
        return self.config.scrapers == "network" and not any(client in network for network in self.config.clients)

    def _has_key(self, scope: Scope) -> bool:
        if self.key_digest is None:
            return False
        for name, value in scope.get("headers") or ():
            if bytes(name).lower() == b"authorization":
                scheme, _, token = bytes(value).decode("latin-1").partition(" ")
                if scheme.lower() == "bearer":
                    return hmac.compare_digest(hashlib.sha256(token.encode("latin-1")).digest(), self.key_digest)
        return False

    def _model_refusal(self, body: bytes) -> tuple[int, str, str] | None:
        try:
            request = json.loads(body, object_pairs_hook=_no_duplicate_keys)
        except (ValueError, UnicodeDecodeError) as error:
            return 400, "BadRequestError", f"the body is not one JSON object: {str(error)[:120]}"
        if not isinstance(request, dict):
            return 400, "BadRequestError", "the body must be a JSON object"
        model = request.get("model")
        if model is None or model == "":
            return None  # vLLM answers with the served model (engine/serving.py, _is_model_supported)
        if not isinstance(model, str):
            return 400, "BadRequestError", "`model` must be a string"
        if self.config.answers(model):
            return None
        served = ", ".join(sorted(self.config.names))
        return 404, "NotFoundError", f"The model {json.dumps(model[:64])} is not served here; served: {served}"


def _no_duplicate_keys(pairs: Iterable[tuple[str, Any]]) -> dict[str, Any]:
    """json's object hook: a key given twice is refused (which one vLLM would read is not ours to guess)."""
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise ValueError(f"the key {json.dumps(key[:64])} appears twice")
        result[key] = value
    return result


def _client_address(scope: Scope) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    client = scope.get("client")
    if not client:
        return None
    try:
        address = ipaddress.ip_address(str(client[0]))
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


async def _read_body(scope: Scope, receive: Receive, send: Send) -> bytes | None:
    """The whole request body (None when the client left, or after answering 413 for one above the cap)."""
    for name, value in scope.get("headers") or ():
        if bytes(name).lower() == b"content-length":
            declared = bytes(value).strip()
            if not declared.isdigit() or int(declared) > MAX_BODY_BYTES:
                await _answer(send, 413, "BadRequestError", f"request bodies are limited to {MAX_BODY_BYTES} bytes")
                return None
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message.get("type") == "http.disconnect":
            return None
        chunk = bytes(message.get("body") or b"")
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            await _answer(send, 413, "BadRequestError", f"request bodies are limited to {MAX_BODY_BYTES} bytes")
            return None
        chunks.append(chunk)
        if not message.get("more_body"):
            return b"".join(chunks)


def _replay(body: bytes, receive: Receive) -> Receive:
    """A receive that hands vLLM the body already read, then whatever the server sends next (a disconnect)."""
    delivered = False

    async def replay() -> Message:
        nonlocal delivered
        if not delivered:
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


async def _answer(send: Send, status: int, kind: str, message: str, *, param: str | None = None) -> None:
    error = {"message": message, "type": kind, "param": param, "code": status}
    body = json.dumps({"error": error}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def _middleware(argv: list[str]) -> list[str]:
    """vLLM's `--middleware` values in order (vLLM adds each as the new outermost layer: the last is outermost)."""
    found = []
    for index, arg in enumerate(argv):
        if arg == "--middleware" and index + 1 < len(argv):
            found.append(argv[index + 1])
        elif arg.startswith("--middleware="):
            found.append(arg.partition("=")[2])
    return found


def launch(argv: list[str], environ: Mapping[str, str] | None = None) -> int:
    """`<config json> serve <vllm args>`: check the environment and the arguments, then run vLLM's CLI here.

    Refuses to start (exit 78) when a refused variable is set, the guard is not among vLLM's middleware, the
    key is missing where one is required, or the arguments are not `serve ...`: a server that would answer
    outside the allowlist never starts."""
    env = os.environ if environ is None else environ
    try:
        if not argv:
            raise ValueError("the launcher needs the guard config, then `serve` and vLLM's arguments")
        config = GuardConfig(json.loads(argv[0]))
        problems = config.env_problems(env)
        rest = list(argv[1:])
        if rest[:1] != ["serve"]:
            problems.append("the arguments after the guard config must start with `serve`")
        if _middleware(rest)[-1:] != [MIDDLEWARE]:
            problems.append(f"vLLM's arguments must end their `--middleware` list with {MIDDLEWARE} (the outermost)")
        if problems:
            raise ValueError("; ".join(problems))
        configure(config, env.get(API_KEY_ENV))
    except ValueError as error:
        print(f"gemma-serving route guard: refusing to start vLLM: {error}", file=sys.stderr)
        return REFUSED_EXIT
    from vllm.entrypoints.cli.main import main  # type: ignore[import-not-found]  # noqa: PLC0415 - in the image only

    sys.argv = ["vllm", *rest]
    main()
    return 0
