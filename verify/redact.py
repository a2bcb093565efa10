"""Keep credentials and terminal control sequences out of everything verify and the MCP server show.

Why one module for both: `verify logs` in a terminal, a CI log and an agent's transcript all show text that
came from somewhere else (Cloud Logging, Google's error messages, an endpoint, a child process), and each
must hide the same secrets the same way. The order is fixed: scrub the whole text first, then escape, then
cut, so a cut can never leave half of a token behind unscrubbed.

- Scrub: the exact values of the credentials the process can see (`SECRET_ENV_NAMES`), then anything
  shaped like a well-known credential (the one list in `policy.credentials`, which the settings and the
  policy pack use too) and PEM private keys from BEGIN to END.
- Escape: C0/C1 control characters (ESC and CSI start every cursor, erase, clear-screen and OSC 52
  clipboard sequence), DEL and the bidi overrides are written as visible `\\xNN` / `\\uNNNN`; newline and
  tab stay, since a log entry may be a multi-line traceback.
- Cut: a line longer than `MAX_LINE_CHARS` keeps its start and says how much was cut.

Every step is linear in the text's length (the shapes are written so that no start position rescans a
run another one already scanned), so a 5 MB log line or two 200 KB lines cost milliseconds, not minutes.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from policy.credentials import CREDENTIAL_SHAPES, PRIVATE_KEY_KIND
from remote.text import escape_controls

REDACTED = "[redacted]"

# Environment variables whose values are credentials the commands may use (verify's --api-key-env default,
# Hugging Face's token, Pulumi's access token and passphrase, Google's OAuth access token for gcloud).
SECRET_ENV_NAMES = (
    "VLLM_API_KEY",
    "HF_TOKEN",
    "HUGGING_FACE_HUB_TOKEN",
    "PULUMI_ACCESS_TOKEN",
    "PULUMI_CONFIG_PASSPHRASE",
    "CLOUDSDK_AUTH_ACCESS_TOKEN",
    "GOOGLE_OAUTH_ACCESS_TOKEN",
)
# Values this short are not scrubbed by value (they would blank out ordinary words).
MIN_SECRET_LENGTH = 8
# The longest line shown whole; a log line of megabytes keeps its start and a marker.
MAX_LINE_CHARS = 4000

_PEM_BEGIN = re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----")
_PEM_END = re.compile(r"-----END [A-Z ]*PRIVATE KEY-----")
_SHAPES = re.compile("|".join(shape.pattern for kind, shape in CREDENTIAL_SHAPES if kind != PRIVATE_KEY_KIND))


def _replacement(found: re.Match[str]) -> str:
    """A URL keeps its scheme and host around the hidden `user:password`; any other shape goes whole."""
    return f"://{REDACTED}@" if found.group().startswith("://") else REDACTED


def cut_lines(text: str, limit: int = MAX_LINE_CHARS) -> str:
    """Every line at most `limit` characters, the rest replaced by a marker saying how much was cut."""
    if len(text) <= limit:
        return text
    return "\n".join(_cut(line, limit) for line in text.split("\n"))


def _cut(line: str, limit: int) -> str:
    if len(line) <= limit:
        return line
    return f"{line[:limit]} [... cut: {len(line) - limit} more characters]"


def _scrub_pem(text: str) -> str:
    """Each private key from its BEGIN line to its END line (or to the end of the text when it has none)."""
    if "PRIVATE KEY-----" not in text:
        return text
    parts: list[str] = []
    position = 0
    while (begin := _PEM_BEGIN.search(text, position)) is not None:
        parts.append(text[position : begin.start()])
        parts.append(REDACTED)
        end = _PEM_END.search(text, begin.end())
        position = end.end() if end is not None else len(text)
    parts.append(text[position:])
    return "".join(parts)


@dataclass(frozen=True, slots=True)
class Redactor:
    """Replaces known secret values and credential-shaped strings with ``[redacted]``; see the module."""

    known_values: tuple[str, ...] = ()
    max_line_chars: int = MAX_LINE_CHARS

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] | None = None, *, extra_names: Iterable[str] = ()) -> Redactor:
        env = os.environ if environ is None else environ
        names = (*SECRET_ENV_NAMES, *extra_names)
        values = {env[name] for name in names if len(env.get(name, "")) >= MIN_SECRET_LENGTH}
        # Longest first, so a value that contains another is replaced whole.
        return cls(known_values=tuple(sorted(values, key=len, reverse=True)))

    def scrub(self, value: str) -> str:
        """Secrets replaced; nothing escaped or cut (for text whose length and bytes must stay)."""
        for secret in self.known_values:
            value = value.replace(secret, REDACTED)
        return _SHAPES.sub(_replacement, _scrub_pem(value))

    def text(self, value: str) -> str:
        """Scrubbed, control characters escaped, long lines cut: safe to print or hand to an agent."""
        return cut_lines(escape_controls(self.scrub(value)), self.max_line_chars)

    def tail(self, value: str, chars: int) -> str:
        """The last `chars` characters of the safe text: scrubbed first, so a cut cannot split a secret."""
        safe = self.text(value.strip())
        if len(safe) <= chars:
            return safe
        return f"[... {len(safe) - chars} characters before]{safe[-chars:]}"

    def data(self, value: Any) -> Any:  # noqa: ANN401 - any JSON-shaped value
        """The same value with every string inside it made safe (dict keys included)."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, Mapping):
            return {self.text(str(key)): self.data(item) for key, item in value.items()}
        if isinstance(value, list | tuple):
            return [self.data(item) for item in value]
        return value
