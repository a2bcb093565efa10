"""Credentials attached to every request: a Google ID token (Cloud Run IAM) or a vLLM API key.

Why ``httpx.Auth`` subclasses: the client attaches the credential to each request, including the
thousands a benchmark sends over an hour, so a token that expires mid-run is refreshed in one place.
Tokens and keys are secrets: they are never printed, never put in results and never appear in an
exception message or a ``repr``.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import threading
import time
from collections.abc import AsyncGenerator, Callable, Generator, Mapping, Sequence

import httpx
from google.auth import exceptions as google_exceptions
from google.auth import jwt

from verify import UsageError
from verify.endpoint import DEFAULT_API_KEY_ENV, AuthKind, Target
from verify.url_guard import id_token_problem

# audience -> ID token. The default asks google-auth, then gcloud; tests inject their own.
IdTokenFetcher = Callable[[str], str]
CommandRunner = Callable[[Sequence[str]], "subprocess.CompletedProcess[str]"]

# Google ID tokens live one hour; fetching five minutes early keeps a slow request from carrying a
# token that expires while it waits in a queue.
REFRESH_MARGIN_S = 300.0
# When a token's expiry cannot be read, assume a short life rather than trusting it forever.
UNKNOWN_EXPIRY_LIFETIME_S = 600.0


class AuthError(UsageError):
    """No credential could be obtained; the endpoint cannot be called as this user (exit 2)."""


class BearerApiKeyAuth(httpx.Auth):
    """vLLM's ``--api-key``: ``Authorization: Bearer <key>``. vLLM checks it on ``/v1/*`` only."""

    def __init__(self, key: str) -> None:
        self._key = key

    def __repr__(self) -> str:
        return "BearerApiKeyAuth(key=<redacted>)"

    @classmethod
    def from_env(cls, variable: str, env: Mapping[str, str] | None = None) -> BearerApiKeyAuth:
        environ = os.environ if env is None else env
        key = environ.get(variable, "").strip()
        if not key:
            raise UsageError(
                f"API-key auth reads the key from the environment variable {variable}, which is unset or "
                f"empty; export it (e.g. from Secret Manager: `export {variable}=$(gcloud secrets versions "
                "access latest --secret SECRET_ID)`) or name another variable with --api-key-env"
            )
        return cls(key)

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        request.headers["Authorization"] = f"Bearer {self._key}"
        yield request


class GoogleIdTokenAuth(httpx.Auth):
    """A Google-signed ID token for ``audience`` (the Cloud Run service URL), refreshed before expiry.

    The fetch runs in a worker thread on the async path: google-auth and gcloud block, and a blocked
    event loop would stall every stream a benchmark has open. One lock makes concurrent requests wait
    for a single refresh instead of each starting its own. A 401 on a token that was cached (not
    just fetched) triggers one refresh and one retry, in case the token was revoked or rotated.
    """

    def __init__(
        self,
        audience: str,
        *,
        fetch: IdTokenFetcher | None = None,
        clock: Callable[[], float] = time.time,
        refresh_margin_s: float = REFRESH_MARGIN_S,
    ) -> None:
        self._audience = audience
        self._fetch = fetch if fetch is not None else fetch_google_id_token
        self._clock = clock
        self._margin = refresh_margin_s
        self._token: str | None = None
        self._expires_at = 0.0
        self._thread_lock = threading.Lock()
        self._async_lock: asyncio.Lock | None = None

    def __repr__(self) -> str:
        return f"GoogleIdTokenAuth(audience={self._audience!r}, token=<redacted>)"

    def sync_auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        token, fresh = self._sync_token()
        response = yield self._with_token(request, token)
        if response.status_code == httpx.codes.UNAUTHORIZED and not fresh:
            self._token = None
            token, _ = self._sync_token()
            yield self._with_token(request, token)

    async def async_auth_flow(self, request: httpx.Request) -> AsyncGenerator[httpx.Request, httpx.Response]:
        token, fresh = await self._async_token()
        response = yield self._with_token(request, token)
        if response.status_code == httpx.codes.UNAUTHORIZED and not fresh:
            self._token = None
            token, _ = await self._async_token()
            yield self._with_token(request, token)

    async def _async_token(self) -> tuple[str, bool]:
        if self._async_lock is None:
            self._async_lock = asyncio.Lock()
        async with self._async_lock:
            if not self._needs_refresh():
                assert self._token is not None
                return self._token, False
            token = await asyncio.to_thread(self._fetch, self._audience)
            self._store(token)
            return token, True

    def _sync_token(self) -> tuple[str, bool]:
        with self._thread_lock:
            if not self._needs_refresh():
                assert self._token is not None
                return self._token, False
            token = self._fetch(self._audience)
            self._store(token)
            return token, True

    def _needs_refresh(self) -> bool:
        return self._token is None or self._clock() >= self._expires_at - self._margin

    def _store(self, token: str) -> None:
        self._token = token
        expiry = token_expiry(token)
        self._expires_at = expiry if expiry is not None else self._clock() + UNKNOWN_EXPIRY_LIFETIME_S

    @staticmethod
    def _with_token(request: httpx.Request, token: str) -> httpx.Request:
        request.headers["Authorization"] = f"Bearer {token}"
        return request


def token_expiry(token: str) -> float | None:
    """The ``exp`` claim, read without verifying the signature: we only need to know when to refresh,
    and the server (not us) decides whether the token is valid."""
    try:
        claims = jwt.decode(token, verify=False)  # type: ignore[no-untyped-call]
    except (ValueError, google_exceptions.GoogleAuthError):
        return None
    exp = claims.get("exp")
    return float(exp) if isinstance(exp, int | float) else None


def fetch_google_id_token(audience: str, *, run: CommandRunner | None = None) -> str:
    """An ID token for ``audience``: google-auth first, then ``gcloud auth print-identity-token``.

    google-auth covers service-account key files (GOOGLE_APPLICATION_CREDENTIALS) and the metadata
    server (CI on Cloud Build, GCE, Cloud Run). It cannot mint an ID token from a user's login, so for
    people at a terminal we ask gcloud. gcloud accepts ``--audiences`` only for service accounts
    ("Invalid account type for --audiences. Requires valid service account."); for a user account it
    issues a token for gcloud's own client ID, which Cloud Run accepts from users holding
    roles/run.invoker, so the flag is passed only when the active account is a service account.
    """
    try:
        token = _fetch_with_google_auth(audience)
    except (google_exceptions.DefaultCredentialsError, google_exceptions.RefreshError) as exc:
        google_auth_problem = _first_line(str(exc))
    except google_exceptions.TransportError as exc:
        google_auth_problem = f"transport error: {_first_line(str(exc))}"
    else:
        if token:
            return token
        google_auth_problem = "google-auth returned an empty token"
    return _fetch_with_gcloud(audience, run or _run_command, google_auth_problem)


def _fetch_with_google_auth(audience: str) -> str:
    from google.auth.transport.requests import Request  # noqa: PLC0415 - pulls in requests only when needed
    from google.oauth2 import id_token  # noqa: PLC0415 - imported when first needed, so importing the module stays cheap

    token = id_token.fetch_id_token(Request(), audience)  # type: ignore[no-untyped-call]
    return token if isinstance(token, str) else ""


def _fetch_with_gcloud(audience: str, run: CommandRunner, google_auth_problem: str) -> str:
    hint = (
        "log in with `gcloud auth login` (a user holding roles/run.invoker on the service), or set "
        "GOOGLE_APPLICATION_CREDENTIALS to a service-account key"
    )
    try:
        account = run(["gcloud", "config", "get-value", "account"]).stdout.strip()
        command = ["gcloud", "auth", "print-identity-token"]
        if account.endswith(".gserviceaccount.com"):
            command.append(f"--audiences={audience}")
        completed = run(command)
    except FileNotFoundError:
        raise AuthError(
            f"cannot get a Google ID token for {audience}: google-auth found no service-account or "
            f"metadata-server credentials ({google_auth_problem}) and `gcloud` is not on PATH; {hint}"
        ) from None
    token = completed.stdout.strip()
    if completed.returncode != 0 or not token:
        raise AuthError(
            f"cannot get a Google ID token for {audience}: google-auth found no service-account or "
            f"metadata-server credentials ({google_auth_problem}), and `{' '.join(command)}` failed "
            f"(exit {completed.returncode}: {_first_line(completed.stderr)}); {hint}"
        )
    return token


def _run_command(command: Sequence[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(command), capture_output=True, text=True, check=False, timeout=60)


def _first_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    first = lines[0] if lines else "no message"
    return first if len(first) <= 200 else first[:197] + "..."


def auth_for_target(
    target: Target,
    *,
    api_key_env: str | None,
    env: Mapping[str, str] | None = None,
    fetch_id_token: IdTokenFetcher | None = None,
) -> httpx.Auth | None:
    """The credential ``target`` needs; raises ``UsageError`` before any request when it is missing, or when
    a Google ID token would go to a host other than its audience's (verify/url_guard.py)."""
    if target.auth_kind is AuthKind.GOOGLE:
        problem = id_token_problem(target.base_url, target.audience)
        if problem is not None:
            raise UsageError(f"{problem}; refused before any request")
        return GoogleIdTokenAuth(target.audience, fetch=fetch_id_token)
    if target.auth_kind is AuthKind.API_KEY:
        return BearerApiKeyAuth.from_env(api_key_env or DEFAULT_API_KEY_ENV, env)
    return None


def auth_advice(target: Target, *, api_key_env: str | None) -> str:
    """What to fix when the endpoint answers 401/403, for the credential this target uses."""
    if target.auth_kind is AuthKind.GOOGLE:
        return (
            "Cloud Run refused the Google ID token: the caller needs roles/run.invoker on the service, and the "
            f"token's audience must be the service URL {target.audience} (check `gcloud auth list` for the "
            "active account, or the service account of GOOGLE_APPLICATION_CREDENTIALS)"
        )
    if target.auth_kind is AuthKind.API_KEY:
        variable = api_key_env or DEFAULT_API_KEY_ENV
        where = f" (kept in the Secret Manager secret {target.api_key_secret})" if target.api_key_secret else ""
        return f"the server did not accept the API key from ${variable}: it must equal vLLM's --api-key{where}"
    return (
        "the endpoint requires credentials but none were sent: for Cloud Run use --auth google (ID token, "
        "roles/run.invoker); for vLLM started with --api-key use --api-key-env VAR"
    )
