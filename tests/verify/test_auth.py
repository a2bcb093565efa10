"""Credentials: Google ID tokens refreshed before expiry, API keys from the environment, and no
secret ever reaching output, results or error messages."""

from __future__ import annotations

import base64
import json
import subprocess
from collections.abc import Sequence

import httpx
import pytest
from google.auth import exceptions as google_exceptions

from tests.fake_vllm import FakeVllm, FakeVllmConfig
from verify import UsageError, auth
from verify.auth import (
    AuthError,
    BearerApiKeyAuth,
    GoogleIdTokenAuth,
    auth_advice,
    auth_for_target,
    fetch_google_id_token,
    token_expiry,
)
from verify.client import make_client
from verify.endpoint import AuthKind, Target
from verify.health import CheckOptions, CheckStatus, run_checks
from verify.health.console import print_health, print_json

SECRET_MARK = "s3cr3t-do-not-print"


def unsigned_jwt(exp: float | None, mark: str = SECRET_MARK) -> str:
    """A structurally valid JWT (signature not checked by the client) carrying ``mark``."""

    def part(data: dict[str, object]) -> str:
        return base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=").decode()

    claims: dict[str, object] = {"aud": "https://svc.a.run.app", "mark": mark}
    if exp is not None:
        claims["exp"] = int(exp)
    signature = base64.urlsafe_b64encode(mark.encode()).rstrip(b"=").decode()
    return f"{part({'alg': 'RS256', 'typ': 'JWT'})}.{part(claims)}.{signature}"


class Clock:
    def __init__(self, now: float = 1_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


class TokenSource:
    """Hands out a new token per fetch, each valid for ``lifetime_s`` from the clock's now."""

    def __init__(self, clock: Clock, lifetime_s: float | None = 3600.0) -> None:
        self.clock = clock
        self.lifetime_s = lifetime_s
        self.audiences: list[str] = []

    def __call__(self, audience: str) -> str:
        self.audiences.append(audience)
        exp = None if self.lifetime_s is None else self.clock.now + self.lifetime_s
        return unsigned_jwt(exp, mark=f"{SECRET_MARK}-{len(self.audiences)}")


def recording_transport(statuses: list[int] | None = None) -> tuple[httpx.MockTransport, list[str | None]]:
    seen: list[str | None] = []
    queue = list(statuses or [])

    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(request.headers.get("Authorization"))
        return httpx.Response(queue.pop(0) if queue else 200)

    return httpx.MockTransport(handle), seen


def test_token_expiry_is_read_without_verifying() -> None:
    assert token_expiry(unsigned_jwt(1234567890)) == 1234567890.0
    assert token_expiry("not-a-jwt") is None
    assert token_expiry(unsigned_jwt(None)) is None


async def test_id_token_is_cached_then_refreshed_before_expiry() -> None:
    """A benchmark longer than the token's hour must not start failing with 401 when it expires."""
    clock = Clock()
    source = TokenSource(clock)
    transport, seen = recording_transport()
    google = GoogleIdTokenAuth("https://svc.a.run.app", fetch=source, clock=clock)
    async with make_client("https://svc.a.run.app", google, transport=transport) as client:
        await client.get("/health")
        clock.now += 3000  # 10 minutes left: still outside the 5-minute margin
        await client.get("/health")
        clock.now += 400  # within 5 minutes of expiry
        await client.get("/health")
    assert source.audiences == ["https://svc.a.run.app", "https://svc.a.run.app"]
    assert seen[0] == seen[1] != seen[2]
    assert all(header is not None and header.startswith("Bearer ") for header in seen)


async def test_token_without_expiry_is_not_trusted_forever() -> None:
    clock = Clock()
    source = TokenSource(clock, lifetime_s=None)
    transport, _ = recording_transport()
    google = GoogleIdTokenAuth("https://svc.a.run.app", fetch=source, clock=clock)
    async with make_client("https://svc.a.run.app", google, transport=transport) as client:
        await client.get("/health")
        clock.now += auth.UNKNOWN_EXPIRY_LIFETIME_S
        await client.get("/health")
    assert len(source.audiences) == 2


async def test_a_401_on_a_cached_token_refreshes_once() -> None:
    """A revoked token must be replaced and the request retried once, not loop forever."""
    clock = Clock()
    source = TokenSource(clock)
    transport, seen = recording_transport([200, 401, 401])
    google = GoogleIdTokenAuth("https://svc.a.run.app", fetch=source, clock=clock)
    async with make_client("https://svc.a.run.app", google, transport=transport) as client:
        assert (await client.get("/health")).status_code == 200
        assert (await client.get("/health")).status_code == 401
    assert len(source.audiences) == 2
    assert len(seen) == 3


def test_sync_flow_refreshes_too() -> None:
    clock = Clock()
    source = TokenSource(clock)
    transport, seen = recording_transport()
    google = GoogleIdTokenAuth("https://svc.a.run.app", fetch=source, clock=clock)
    with httpx.Client(base_url="https://svc.a.run.app", auth=google, transport=transport) as client:
        client.get("/health")
        client.get("/health")
    assert len(source.audiences) == 1
    assert seen[0] == seen[1]


def test_reprs_hide_credentials() -> None:
    """A credential object logged or shown in a traceback must not reveal what it holds."""
    assert SECRET_MARK not in repr(BearerApiKeyAuth(SECRET_MARK))
    token = unsigned_jwt(None)
    transport, _ = recording_transport()
    google = GoogleIdTokenAuth("https://svc.a.run.app", fetch=lambda _aud: token)
    with httpx.Client(base_url="https://svc.a.run.app", auth=google, transport=transport) as client:
        client.get("/health")  # the token is now cached inside
    assert token.split(".")[2] not in repr(google)
    assert "redacted" in repr(google)


def test_api_key_from_a_missing_variable_names_it() -> None:
    """An unset key variable must be a usage error naming the variable, before any request."""
    with pytest.raises(UsageError, match="TPU_KEY"):
        BearerApiKeyAuth.from_env("TPU_KEY", env={})
    with pytest.raises(UsageError, match="VLLM_API_KEY"):
        auth_for_target(
            Target(base_url="http://10.0.0.5:8000", model=None, auth_kind=AuthKind.API_KEY, source="url"),
            api_key_env=None,
            env={},
        )


def test_auth_for_target_picks_the_credential() -> None:
    google = Target(base_url="https://svc.a.run.app", model=None, auth_kind=AuthKind.GOOGLE, source="url")
    keyed = Target(base_url="http://10.0.0.5:8000", model=None, auth_kind=AuthKind.API_KEY, source="url")
    local = Target(base_url="http://127.0.0.1:8000", model=None, auth_kind=AuthKind.NONE, source="url")
    assert isinstance(auth_for_target(google, api_key_env=None, fetch_id_token=lambda _a: "t"), GoogleIdTokenAuth)
    assert isinstance(auth_for_target(keyed, api_key_env="K", env={"K": "v"}), BearerApiKeyAuth)
    assert auth_for_target(local, api_key_env=None) is None


def test_auth_advice_names_the_fix() -> None:
    """A 401 must point at roles/run.invoker and the audience, or at the key variable."""
    google = Target(base_url="https://svc.a.run.app/x", model=None, auth_kind=AuthKind.GOOGLE, source="url")
    assert "roles/run.invoker" in auth_advice(google, api_key_env=None)
    assert "https://svc.a.run.app" in auth_advice(google, api_key_env=None)
    keyed = Target(base_url="http://10.0.0.5:8000", model=None, auth_kind=AuthKind.API_KEY, source="url")
    assert "$TPU_KEY" in auth_advice(keyed, api_key_env="TPU_KEY")


class GcloudDouble:
    """Answers `gcloud config get-value account` and `gcloud auth print-identity-token`."""

    def __init__(self, account: str, token: str = "", returncode: int = 0, stderr: str = "") -> None:
        self.account = account
        self.token = token
        self.returncode = returncode
        self.stderr = stderr
        self.commands: list[list[str]] = []

    def __call__(self, command: Sequence[str]) -> subprocess.CompletedProcess[str]:
        self.commands.append(list(command))
        if list(command[:3]) == ["gcloud", "config", "get-value"]:
            return subprocess.CompletedProcess(list(command), 0, self.account + "\n", "")
        return subprocess.CompletedProcess(list(command), self.returncode, self.token + "\n", self.stderr)


@pytest.fixture
def no_google_auth_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(_audience: str) -> str:
        raise google_exceptions.DefaultCredentialsError(  # type: ignore[no-untyped-call]
            "Neither metadata server or valid service account credentials are found."
        )

    monkeypatch.setattr(auth, "_fetch_with_google_auth", refuse)


@pytest.mark.usefixtures("no_google_auth_credentials")
def test_user_login_falls_back_to_gcloud_without_audiences() -> None:
    """gcloud refuses --audiences for user accounts, so it must not be passed for them."""
    gcloud = GcloudDouble("someone@example.com", token="user-token")
    assert fetch_google_id_token("https://svc.a.run.app", run=gcloud) == "user-token"
    assert gcloud.commands[-1] == ["gcloud", "auth", "print-identity-token"]


@pytest.mark.usefixtures("no_google_auth_credentials")
def test_service_account_login_gets_the_audience() -> None:
    gcloud = GcloudDouble("ci@proj.iam.gserviceaccount.com", token="sa-token")
    assert fetch_google_id_token("https://svc.a.run.app", run=gcloud) == "sa-token"
    assert gcloud.commands[-1] == ["gcloud", "auth", "print-identity-token", "--audiences=https://svc.a.run.app"]


@pytest.mark.usefixtures("no_google_auth_credentials")
def test_no_credentials_anywhere_is_an_auth_error_that_says_what_to_do() -> None:
    gcloud = GcloudDouble(
        "",
        returncode=1,
        stderr="ERROR: (gcloud.auth.print-identity-token) You do not currently have an active account selected.\n",
    )
    with pytest.raises(AuthError, match=r"metadata server.*active account.*gcloud auth login") as raised:
        fetch_google_id_token("https://svc.a.run.app", run=gcloud)
    assert isinstance(raised.value, UsageError)


@pytest.mark.usefixtures("no_google_auth_credentials")
def test_missing_gcloud_is_an_auth_error() -> None:
    def no_gcloud(_command: Sequence[str]) -> subprocess.CompletedProcess[str]:
        raise FileNotFoundError("gcloud")

    with pytest.raises(AuthError, match="`gcloud` is not on PATH"):
        fetch_google_id_token("https://svc.a.run.app", run=no_gcloud)


async def test_rejected_id_token_never_appears_in_results_or_output(capsys: pytest.CaptureFixture[str]) -> None:
    """Cloud Run answering 401 must produce a message about roles/run.invoker, with the token nowhere:
    not in the report, its JSON, the table, nor any exception text."""
    token = unsigned_jwt(None)
    async with FakeVllm(FakeVllmConfig(front_door_status=401)) as server:
        target = Target(base_url=server.url, model="tiny-gemma", auth_kind=AuthKind.GOOGLE, source="url")
        google = GoogleIdTokenAuth(target.audience, fetch=lambda _aud: token)
        options = CheckOptions(wait_s=0, auth_help=auth_advice(target, api_key_env=None))
        async with make_client(server.url, google) as client:
            report = await run_checks(client, target, options)
        assert server.requests[0].headers["Authorization"] == f"Bearer {token}"  # it was sent...
    assert report.checks[0].status is CheckStatus.UNAUTHORISED
    assert "roles/run.invoker" in (report.checks[0].cause or "")
    print_json(report)
    print_health(report)
    printed = capsys.readouterr()
    for text in (report.model_dump_json(), repr(report), printed.out, printed.err):
        for secret_part in token.split("."):  # ...and never shown, whole or in part
            assert secret_part not in text


async def test_rejected_api_key_never_appears_in_results(capsys: pytest.CaptureFixture[str]) -> None:
    """vLLM's --api-key protects /v1/* only: /health passes, /v1/models 401s; the key stays hidden."""
    async with FakeVllm(FakeVllmConfig(api_key="the-right-key")) as server:
        target = Target(base_url=server.url, model="tiny-gemma", auth_kind=AuthKind.API_KEY, source="url")
        options = CheckOptions(wait_s=0, auth_help=auth_advice(target, api_key_env="KEY_VAR"))
        async with make_client(server.url, BearerApiKeyAuth(SECRET_MARK)) as client:
            report = await run_checks(client, target, options)
    statuses = {check.name.value: check.status for check in report.checks}
    assert statuses["readiness"] is CheckStatus.PASS
    assert statuses["models"] is CheckStatus.UNAUTHORISED
    assert report.exit_code == 2
    assert "$KEY_VAR" in (report.checks[1].cause or "")
    print_json(report)
    print_health(report)
    printed = capsys.readouterr()
    assert SECRET_MARK not in report.model_dump_json() + printed.out + printed.err


async def test_a_credential_that_cannot_be_fetched_is_unauthorised_not_a_crash() -> None:
    """No gcloud login: the report must say unauthorised (exit 2) with the fix, not a traceback."""

    def fail(_audience: str) -> str:
        raise AuthError("cannot get a Google ID token for https://svc.a.run.app: run `gcloud auth login`")

    async with FakeVllm() as server:
        target = Target(base_url=server.url, model="tiny-gemma", auth_kind=AuthKind.GOOGLE, source="url")
        async with make_client(server.url, GoogleIdTokenAuth(target.audience, fetch=fail)) as client:
            report = await run_checks(client, target, CheckOptions(wait_s=0))
    assert report.checks[0].status is CheckStatus.UNAUTHORISED
    assert "gcloud auth login" in (report.checks[0].cause or "")
    assert report.exit_code == 2
