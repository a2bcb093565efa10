"""What a Google API call can end in, other than its answer: Google's own error, or no usable answer at all.

Errors come back as `google.rpc.Status` (`{"error": {"code", "message", "status", "details": [...]}}`);
`GoogleApiError` keeps the `ErrorInfo` reason (SERVICE_DISABLED, IAM_PERMISSION_DENIED, ...) and its
metadata (the service to enable, the permission missing) so each caller can say what to do. Every text
Google supplied is escaped (remote/text.py) before anyone can print it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import pydantic

from remote.text import escape_controls

if TYPE_CHECKING:
    import httpx

# Google's HTTP codes a caller branches on (httpx.codes would load httpx for two numbers).
_FORBIDDEN = 403
_NOT_FOUND = 404

# Text a Google API supplied, with its control characters escaped (a revision's condition message or a log
# line must not clear the terminal or write to the clipboard).
GoogleText = Annotated[str, pydantic.AfterValidator(escape_controls)]
Answer = TypeVar("Answer", bound=pydantic.BaseModel)


class CannotCheckError(Exception):
    """No usable answer came (no credentials, API unreachable, an answer too slow, too large or misshapen):
    a reader says "could not check" (exit 2), never concludes from it."""


class GaveUpError(CannotCheckError):
    """A call that kept failing transiently (429, 5xx, a dropped connection) through every attempt allowed."""

    def __init__(self, api: str, status: int, attempts: int, last: str) -> None:
        super().__init__(f"{api} API still failing after {attempts} attempts (last: {last})")
        # The last answer's HTTP status (503 for a dropped connection: the service was not available).
        self.status = status


@dataclass(frozen=True)
class GoogleApiError(Exception):
    """An error answer from a Google API, as google.rpc.Status with its ErrorInfo."""

    api: str
    code: int
    status: str
    message: str
    reason: str | None = None
    metadata: Mapping[str, str] = field(default_factory=dict)

    def __str__(self) -> str:
        return f"{self.api}: {self.code} {self.status}: {self.message}"

    @property
    def service_disabled(self) -> bool:
        return self.reason == "SERVICE_DISABLED"

    @property
    def permission_denied(self) -> bool:
        return self.code == _FORBIDDEN and not self.service_disabled

    @property
    def not_found(self) -> bool:
        return self.code == _NOT_FOUND

    def advice(self, project: str) -> str:
        """One line: what to do about this error."""
        if self.service_disabled:
            service = self.metadata.get("service") or f"{self.api}.googleapis.com"
            return f"enable it: gcloud services enable {service} --project {project}"
        if self.permission_denied:
            permission = self.metadata.get("permission")
            what = f" ({permission})" if permission else ""
            return f"your credentials may not read this{what}; ask for a role that grants it, or use another account"
        return "see the message; retry later if Google reports an internal or unavailable error"


class _ErrorDetail(pydantic.BaseModel):
    """`google.rpc.ErrorInfo` (or another detail, whose reason and metadata are then empty)."""

    model_config = pydantic.ConfigDict(extra="ignore", populate_by_name=True)

    type: str = pydantic.Field(default="", alias="@type")
    reason: GoogleText | None = None
    metadata: dict[str, GoogleText] = pydantic.Field(default_factory=dict)


class _Status(pydantic.BaseModel):
    """`google.rpc.Status`, the body of every Google API error."""

    model_config = pydantic.ConfigDict(extra="ignore")

    code: int | None = None
    status: GoogleText | None = None
    message: GoogleText = ""
    details: list[_ErrorDetail | Any] = pydantic.Field(default_factory=list)


def error_from_response(api: str, response: httpx.Response) -> GoogleApiError:
    """Parse google.rpc.Status; fall back to the status line for bodies that are not Google's."""
    try:
        body = response.json()
        status = _Status.model_validate(body.get("error") if isinstance(body, dict) else None)
    except (json.JSONDecodeError, UnicodeDecodeError, pydantic.ValidationError):
        text = escape_controls(response.text[:200].strip())
        return GoogleApiError(api, response.status_code, response.reason_phrase, text or response.reason_phrase)
    info = next(
        (d for d in status.details if isinstance(d, _ErrorDetail) and d.type.endswith("google.rpc.ErrorInfo")), None
    )
    return GoogleApiError(
        api=api,
        code=status.code or response.status_code,
        status=status.status or response.reason_phrase,
        message=status.message,
        reason=(info.reason or None) if info is not None else None,
        metadata=dict(info.metadata) if info is not None else {},
    )


def json_object(response: httpx.Response, source: str) -> dict[str, Any]:
    """An answer's body as the JSON object it must be; anything else is "could not check", never guessed at."""
    try:
        data = response.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise CannotCheckError(f"{source} answered {response.status_code} without JSON") from None
    if not isinstance(data, dict):
        raise CannotCheckError(f"{source} answered {type(data).__name__} where an object belongs")
    return data


def parse_answer(model: type[Answer], data: object, api: str) -> Answer:
    """A Google answer (or one item of a list) as its model; a wrong shape or type is "could not check"."""
    try:
        return model.model_validate(data)
    except pydantic.ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "the body"
        raise CannotCheckError(
            f"{api} API answered in an unexpected shape ({model.__name__}: {where}: {first['msg']}); "
            "nothing was concluded from it"
        ) from None
