"""No credential in a stack file's settings: refused before anything else reads them.

Why before validation: stack files are committed, and plans (text and JSON) are printed in every pull
request's CI log. A token pasted into a setting would reach both, and even a validation message that
quotes the value would leak it. So the raw config is searched first, every string at every depth, and a
match is named by its key only, never echoed. Credentials belong in Secret Manager (or the stack's
`hfToken` Pulumi secret, which never enters the settings); settings may only *name* a secret.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from policy.credentials import CREDENTIAL_FLAGS, credential_kind

# Settings whose value is a free-form `vllm serve` argument list, as (block, key).
_ARGUMENT_LISTS = (("vllm", "extraArgs"),)
# What replaces each credential flag (see CREDENTIAL_FLAGS).
_INSTEAD = {
    "--hf-token": (
        "a gated checkpoint is fetched by the import job with the stack's hfToken secret "
        "(`pulumi config set --secret gemma-serving:hfToken ...`) and the server reads the bucket"
    ),
    "--api-key": (
        "Cloud Run services are guarded by IAM (roles/run.invoker), and the TPU node gets its generated key as "
        "VLLM_API_KEY from Secret Manager"
    ),
}
_SECRET_NAMING = ("secret", "token", "password", "apikey")

_STORE_IT = (
    "keep the credential in Secret Manager (docs/deploying.md, 'Secrets') and revoke this one: it is now "
    "in the stack file's history"
)


def _strings(value: Any, path: str) -> Iterator[tuple[str, str]]:  # noqa: ANN401 - raw config values
    """Every string in a raw config value (mapping keys included), with the dotted key it sits under."""
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, Mapping):
        for key, item in value.items():
            child = f"{path}.{key}" if path else str(key)
            yield child, str(key)
            yield from _strings(item, child)
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            yield from _strings(item, f"{path}[{index}]")


def _names_a_secret(path: str) -> bool:
    leaf = path.rsplit(".", 1)[-1].split("[", 1)[0].lower()
    return any(word in leaf for word in _SECRET_NAMING)


def _flag_problems(raw: Mapping[str, Any]) -> list[str]:
    problems: list[str] = []
    for block, name in _ARGUMENT_LISTS:
        settings = raw.get(block)
        value = settings.get(name) if isinstance(settings, Mapping) else None
        if isinstance(value, list):
            problems += _credential_flags(f"{block}.{name}", value)
    return problems


def _credential_flags(key: str, value: list[Any]) -> list[str]:
    flags = sorted({str(arg).partition("=")[0] for arg in value} & CREDENTIAL_FLAGS)
    return [
        f"{key}: {flag} puts a credential on the command line, where the plan, the Cloud Run revision and the "
        f"node's process list show it; remove the flag: {_INSTEAD[flag]}"
        for flag in flags
    ]


def credential_problems(raw: Mapping[str, Any], prefix: str = "") -> list[str]:
    """One message per setting that holds a credential; the messages name keys, never values."""
    problems = [f"{prefix}{line}" for line in _flag_problems(raw)]
    seen: set[str] = set()
    for path, text in _strings(raw, ""):
        kind = credential_kind(text)
        if kind is None or path in seen:
            continue
        seen.add(path)
        if _names_a_secret(path):
            problems.append(
                f"{prefix}{path}: holds {kind}, but this setting names the Secret Manager secret that stores it "
                f"(its id, e.g. hf-token, or projects/<project>/secrets/<id>), never the credential itself; "
                f"{_STORE_IT}"
            )
        else:
            problems.append(f"{prefix}{path}: holds what looks like {kind}; {_STORE_IT}")
    return problems
