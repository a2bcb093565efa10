"""Secrets never travel in plain text through a resource's configuration.

Why: a Cloud Run env var's `value` and a TPU VM's instance metadata are readable by every project
viewer and by anything on the VM; the hand-made TPU deployment put the Hugging Face token in its
startup script. Secrets belong in Secret Manager, referenced (Cloud Run `valueSource.secretKeyRef`) or
fetched on the VM by its own identity. Marking a value as a Pulumi secret does not help here: it hides
the value in Pulumi's state, not in Google's resource.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

from policy.credentials import credential_kind
from policy.guardrail import Guardrail
from policy.images import CONTAINER_PATHS
from policy.props import field, has_key, mappings, strings, walk_strings
from policy.tpu import DYNAMIC_PREFIX, GCP_QUEUED_RESOURCE, node_specs, queued_resource_body
from policy.vllm_args import flag_values, tokens

# Env var names that hold credentials: a whole word TOKEN, SECRET, PASSWORD, API_KEY... (so that
# TOKENIZERS_PARALLELISM or HF_HUB_OFFLINE are not mistaken for one).
SECRET_NAME = re.compile(r"(^|_)(TOKEN|SECRET|PASSWORD|PASSWD|API_?KEY|ACCESS_KEY|PRIVATE_KEY)(_|$)", re.IGNORECASE)


def is_literal(value: str) -> bool:
    """A value typed out, rather than a shell expansion or file reference that fetches it at run time."""
    stripped = value.strip().strip("'\"")
    return bool(stripped) and not stripped.startswith(("$", "@", "/"))


def _container_problems(resource_type: str, props: Mapping[str, Any]) -> Iterator[str]:
    path = CONTAINER_PATHS[resource_type]
    for index, container in enumerate(mappings(field(props, *path))):
        where = f"{'.'.join(path)}[{index}]"
        for env in mappings(field(container, "envs")):
            name = field(env, "name")
            # A plain `value` is plain text whatever it holds, so it need not be known to be refused.
            if isinstance(name, str) and SECRET_NAME.search(name) and has_key(env, "value"):
                yield (
                    f"{where}: env {name} has a plain value; reference a Secret Manager secret "
                    "(valueSource.secretKeyRef) instead"
                )
        argv = tokens([*strings(field(container, "commands")), *strings(field(container, "args"))])
        if any(is_literal(value) for value in flag_values(argv, "--api-key")):
            yield (
                f"{where}: --api-key is given on the command line; pass it as the VLLM_API_KEY env var from a "
                "Secret Manager secret"
            )


def _queued_resource_problems(resource_type: str, props: Mapping[str, Any]) -> Iterator[str]:
    body = queued_resource_body(resource_type, props)
    if body is None:
        return
    for index, spec in enumerate(node_specs(body)):
        metadata = field(spec, "node", "metadata")
        script = field(metadata, "startup-script")
        if isinstance(script, str) and any(is_literal(v) for v in flag_values(tokens([script]), "--api-key")):
            yield (
                f"node {index}: the startup script passes --api-key a literal key; read it from Secret Manager "
                "on the VM instead"
            )
        for key in _secret_named_keys(metadata):
            yield f"node {index}: metadata key {key!r} holds a credential in plain text; use Secret Manager"


def _secret_named_keys(metadata: Any) -> list[str]:  # noqa: ANN401 - untyped by nature: a policy/API property value of any shape
    if not isinstance(metadata, Mapping):
        return []
    return [str(key) for key in metadata if SECRET_NAME.search(str(key).replace("-", "_"))]


def check_no_plaintext_secrets(
    resource_type: str, props: Mapping[str, Any], _config: Mapping[str, Any]
) -> Iterator[str]:
    if resource_type in CONTAINER_PATHS:
        yield from _container_problems(resource_type, props)
    else:
        yield from _queued_resource_problems(resource_type, props)
    for where, text in walk_strings(props):
        # `__provider` is a dynamic provider's pickled code, not configuration.
        kind = None if where.startswith("__provider") else credential_kind(text)
        if kind:
            yield f"{where or 'a property'} contains {kind}; keep it in Secret Manager"


NO_PLAINTEXT_SECRETS = Guardrail(
    name="no-plaintext-secrets",
    description="No credential sits in plain text in a Cloud Run env var, a command line or TPU metadata.",
    resource_types=frozenset({*CONTAINER_PATHS, GCP_QUEUED_RESOURCE}),
    type_prefixes=(DYNAMIC_PREFIX,),
    check=check_no_plaintext_secrets,
)
