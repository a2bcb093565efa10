"""The server's redactor is verify's (`verify.redact`): one scrubber for the terminal and the agent alike.

Why the server scrubs its own results as well as the CLIs': an agent's transcript is stored and shown in
places a terminal is not, so every tool result and resource passes through it as a last line of defence.
"""

from __future__ import annotations

from verify.redact import REDACTED, SECRET_ENV_NAMES, Redactor

__all__ = ["REDACTED", "SECRET_ENV_NAMES", "Redactor"]
