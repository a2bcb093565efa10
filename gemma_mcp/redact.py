"""Keep secret values out of every tool result, whatever the command under it printed.

Why here as well as in the CLIs: an agent's transcript is stored and shown in places a terminal is
not, so the server scrubs its own results as a last line of defence: the exact values of the
credentials it can see in its environment, and anything shaped like a well-known credential.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from policy.credentials import CREDENTIAL_SHAPES

REDACTED = "[redacted]"

# Environment variables whose values are credentials the children may use (verify's --api-key-env default,
# Hugging Face's token, Pulumi's access token and passphrase).
SECRET_ENV_NAMES = (
    "VLLM_API_KEY",
    "HF_TOKEN",
    "HUGGING_FACE_HUB_TOKEN",
    "PULUMI_ACCESS_TOKEN",
    "PULUMI_CONFIG_PASSPHRASE",
)
# Values this short are not scrubbed by value (they would blank out ordinary words).
MIN_SECRET_LENGTH = 8

# Everything shaped like a credential, from the one list the settings and the policy pack use too. A PEM
# key is scrubbed from its BEGIN line to its END line, not only the header the settings look for.
_PEM_BLOCK = r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)"
_CREDENTIAL_SHAPES = re.compile("|".join([_PEM_BLOCK, *(shape.pattern for _, shape in CREDENTIAL_SHAPES)]))


@dataclass(frozen=True, slots=True)
class Redactor:
    """Replaces known secret values and credential-shaped strings with ``[redacted]``."""

    known_values: tuple[str, ...] = ()

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] | None = None, *, extra_names: Iterable[str] = ()) -> Redactor:
        env = os.environ if environ is None else environ
        names = (*SECRET_ENV_NAMES, *extra_names)
        values = tuple(sorted({env[name] for name in names if len(env.get(name, "")) >= MIN_SECRET_LENGTH}, key=len))
        # Longest first, so a value that contains another is replaced whole.
        return cls(known_values=values[::-1])

    def text(self, value: str) -> str:
        for secret in self.known_values:
            value = value.replace(secret, REDACTED)
        return _CREDENTIAL_SHAPES.sub(REDACTED, value)

    def data(self, value: Any) -> Any:  # noqa: ANN401 - any JSON-shaped value
        """The same value with every string inside it scrubbed (dict keys included)."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, Mapping):
            return {self.text(str(key)): self.data(item) for key, item in value.items()}
        if isinstance(value, list | tuple):
            return [self.data(item) for item in value]
        return value
