"""Why a check failed, in the words a user acts on: the likely cause of each kind of answer.

Why apart from the checks: the same observation (a 503, a refused connection, an empty stream) gets
the same explanation whichever check saw it, and the wording can be reviewed in one place.
"""

from __future__ import annotations

import socket
import ssl
from dataclasses import dataclass

import httpx

from serving.container import VLLM_PORT
from verify import streaming
from verify.responses import body_excerpt, error_message

NOT_OPENAI = "the answer is not in the OpenAI/vLLM shape: a proxy or another service answered at this URL"
NOT_VLLM_METRICS = "the endpoint's /metrics is not vLLM's: a proxy or another service answers at this URL"
NOT_A_VLLM_SERVER = (
    "the base URL does not point at a vLLM OpenAI-compatible server (a path prefix, the wrong port, or another service)"
)

_STATUS_CAUSES: dict[int, str] = {
    429: "no instance could take the request: Cloud Run's concurrency x max instances is exhausted",
    408: "the platform's request timeout (Cloud Run: the service timeout) ended the request first",
    504: "the platform's request timeout (Cloud Run: the service timeout) ended the request first",
    502: "the instance is restarting or failing: read the service's logs",
    503: "the instance is restarting or failing: read the service's logs",
}


def status_got(status: int, body: str) -> str:
    """``503 Service Unavailable: <body excerpt>``."""
    reason = httpx.codes.get_reason_phrase(status)
    excerpt = body_excerpt(body)
    return f"{status} {reason}" + (f": {excerpt}" if excerpt else "")


def cause_for_status(status: int, body: str, model: str | None) -> str:
    message = error_message(body) or body_excerpt(body)
    if status == httpx.codes.BAD_REQUEST:
        return f"vLLM rejected the request as invalid ({message}): e.g. max_tokens above max_model_len"
    if status == httpx.codes.NOT_FOUND:
        if "does not exist" in message:
            return f"vLLM does not serve a model named {model!r} ({message})"
        return "no such path: the base URL is wrong (an extra path prefix, or not a vLLM OpenAI server)"
    if status in _STATUS_CAUSES:
        return _STATUS_CAUSES[status]
    if status >= 500:
        return "vLLM failed while handling the request: read the server's log"
    return "an unexpected status for this request"


def transport_cause(failure: streaming.StreamFailure) -> str:
    """A request after readiness that got no answer."""
    kinds = streaming.FailureKind
    if failure.kind is kinds.READ_TIMEOUT:
        return (
            "the request timed out (--timeout bounds the silence within one request): the server is stalled "
            "or overloaded"
        )
    if failure.kind is kinds.DEADLINE_EXCEEDED:
        return (
            "the request took longer than --deadline in all: the server is stalled, overloaded or never ends its answer"
        )
    return "the server stopped answering after it was ready: it crashed, restarted or a proxy dropped the connection"


def empty_output_cause(finish_reason: str | None, tokens: int | None) -> str:
    if finish_reason is None or tokens is None:
        return "the answer lacks OpenAI fields vLLM always sends: a proxy or a non-vLLM server answered"
    if finish_reason == "stop" and tokens <= 1:
        return (
            "the model stopped at once (end-of-sequence first): usually a chat template that does not "
            "match the model, or a wrong tokenizer/checkpoint pairing"
        )
    return (
        "the model generated only special or whitespace tokens: a chat template or tokenizer that does "
        "not match the checkpoint, or a reasoning/tool parser that swallowed the text"
    )


# A connection that failed when nothing had shown the server up (`verify query` runs no readiness check):
# the server may never have started, so "after it was ready" would blame a crash that never happened.
_NOT_CHECKED_READY = {
    streaming.FailureKind.CONNECT_ERROR: (
        "nothing accepts connections at this address: the server is not running (still starting, stopped or "
        "crashed) or the URL's host or port is wrong; `gemma-verify health` waits for it to become ready"
    ),
    streaming.FailureKind.CONNECT_TIMEOUT: (
        "the address did not accept a connection in time: a firewall drops the packets, the host is wrong, or "
        "the server is overloaded; `gemma-verify health` waits for it to become ready"
    ),
}


def stream_cause(failure: streaming.StreamFailure, model: str, *, readiness_checked: bool = True) -> str:
    """The likely cause of a failed streamed request; ``readiness_checked`` says whether /health answered first."""
    kinds = streaming.FailureKind
    if failure.status is not None and failure.kind is not kinds.MALFORMED_STREAM:
        return cause_for_status(failure.status, failure.detail, model)
    if not readiness_checked and failure.kind in _NOT_CHECKED_READY:
        return _NOT_CHECKED_READY[failure.kind]
    causes = {
        kinds.CONNECT_ERROR: "the server stopped accepting connections after it was ready: it crashed or restarted",
        kinds.CONNECT_TIMEOUT: "the server stopped accepting connections in time: overloaded or restarting",
        kinds.READ_TIMEOUT: "the stream went silent for longer than --timeout: the server stalled or is overloaded",
        kinds.DEADLINE_EXCEEDED: (
            "the stream did not finish within --deadline: the server streams without end, or far slower than "
            "one token a second"
        ),
        kinds.TOO_MANY_TOKENS: (
            "the server sent more tokens than max_tokens allows: it ignores max_tokens (not vLLM, or a proxy "
            "that rewrites the stream)"
        ),
        kinds.STREAM_INTERRUPTED: (
            "the stream ended before data: [DONE]: the server crashed mid-generation, or a proxy or the "
            "platform's request timeout cut the connection"
        ),
        kinds.EMPTY_OUTPUT: empty_output_cause("stop", 0),
        kinds.MALFORMED_STREAM: (
            "the body is not vLLM's SSE stream (or lacks the usage chunk stream_options.include_usage asks "
            "for, or its usage contradicts the stream): a proxy rewrote or buffered it, or the server is not vLLM"
        ),
        kinds.WRONG_MODEL: (
            "another model answered: a router, gateway or proxy in front of vLLM sent the request to a model "
            "other than the one named"
        ),
    }
    return causes.get(failure.kind, "the streamed request failed")


# --- readiness ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class NotReady:
    """One unsuccessful poll: a few words for the table and progress, the detail for "got"."""

    short: str
    detail: str
    cause: str


def fatal_transport_problem(exc: httpx.HTTPError) -> tuple[str, str] | None:
    """Errors that waiting cannot fix: the name does not resolve, TLS fails, the scheme is wrong."""
    for cause in _causes(exc):
        text = str(cause)
        if "Name or service not known" in text or "nodename nor servname" in text or _is_dns_error(cause):
            return (
                f"DNS lookup failed: {body_excerpt(text)}",
                "the host name does not resolve: check the URL (a deleted service, or a typo)",
            )
        if isinstance(cause, ssl.SSLError):
            return (
                f"TLS handshake failed: {body_excerpt(text)}",
                (
                    "the server's certificate is not trusted for this host name, or it does not speak TLS "
                    "(try http:// for a local server)"
                ),
            )
    if isinstance(exc, httpx.UnsupportedProtocol):
        return (str(exc), "the URL's scheme is not http or https")
    return None


def _is_dns_error(error: BaseException) -> bool:
    return isinstance(error, socket.gaierror) or type(error).__name__ == "ClientConnectorDNSError"


def _causes(exc: BaseException) -> list[BaseException]:
    chain: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in chain:
        chain.append(current)
        current = current.__cause__ or current.__context__
    return chain


def transport_not_ready(failure: streaming.StreamFailure) -> NotReady:
    if failure.kind is streaming.FailureKind.CONNECT_ERROR:
        return NotReady(
            "connection refused",
            f"connection refused or reset ({failure.detail})",
            "nothing accepts connections at this address: the server is not started (a TPU VM still "
            "running its startup script), it crashed while loading, or the URL's host or port is wrong",
        )
    if failure.kind in {
        streaming.FailureKind.CONNECT_TIMEOUT,
        streaming.FailureKind.READ_TIMEOUT,
        streaming.FailureKind.DEADLINE_EXCEEDED,
    }:
        return NotReady(
            "no answer in time",
            f"no answer in time ({failure.detail})",
            f"the address does not answer: a firewall dropping packets (TPU: the VPC rule for tpu.port, {VLLM_PORT} "
            "unless set), "
            "or an instance too busy to answer /health",
        )
    return NotReady(
        failure.kind.value.replace("_", " "), failure.detail, "the connection broke while the server was starting"
    )


def status_not_ready(status: int, body: str) -> NotReady:
    short = f"{status} {httpx.codes.get_reason_phrase(status)}"
    if status == httpx.codes.TOO_MANY_REQUESTS:
        cause = (
            "no instance can take a request: Cloud Run's max instances is 0 or exhausted, or the GPU "
            "quota of the region leaves no capacity"
        )
    else:
        cause = (
            "the server is starting, restarting or failing its startup probe: the model may still be "
            "loading (minutes for 12B, longer for 31B); raise --wait or read the service's logs"
        )
    return NotReady(short, status_got(status, body), cause)
