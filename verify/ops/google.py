"""How verify builds the project's one Google REST client (remote/google_client.py), and Google's time format.

The client itself (auth, paging, deadlines, body caps, Google's errors) lives in `remote/`, below every
layer, because the TPU provider calls the same APIs the same way; what is verify's own is here: every
command's client from Application Default Credentials, with `VERIFY_GOOGLE_API_ROOT` pointing all APIs at a
local fake in tests, and the RFC 3339 times Monitoring and Logging take and answer.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime

from remote.google_auth import adc_tokens
from remote.google_client import GoogleApis

# Replaces scheme and host of every Google API (a local fake, an emulator); documented for tests only.
API_ROOT_ENV = "VERIFY_GOOGLE_API_ROOT"


def apis_from_environment() -> GoogleApis:
    """The client every ops entry point uses: ADC, and `VERIFY_GOOGLE_API_ROOT` when set (a local fake)."""
    return GoogleApis(adc_tokens(), api_root=os.environ.get(API_ROOT_ENV) or None)


def rfc3339(moment: datetime) -> str:
    """A time as Google's APIs take it in a query (Monitoring's interval, Logging's filter): UTC, seconds."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_rfc3339(text: str) -> datetime | None:
    """A timestamp a Google API answered (RFC 3339, `Z` or an offset); None when it is not one."""
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
