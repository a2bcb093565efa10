"""`--url` never hands the stack's credentials to the metadata server, a private host or a stranger.

Red team: the CLI's `--url` sent the API key (or a Google ID token) to `http://169.254.169.254`, to
`metadata.google.internal` and to private addresses when asked, while the MCP tools already refused them.
Both now use one guard (verify/url_guard.py). Loopback stays allowed (local servers, port-forwards and
the TPU ssh tunnel are there); private and link-local addresses need `--allow-private-url`; the metadata
server is refused whatever the flag, in every spelling; a Google ID token goes only to its own audience.
"""

from __future__ import annotations

import pytest
from mcp.server.mcpserver.exceptions import ToolError

from gemma_mcp.urls import check_url as mcp_check_url
from verify import UsageError, cli
from verify.auth import auth_for_target
from verify.endpoint import AuthKind, Target, TargetOptions, resolve_target
from verify.url_guard import UnsafeUrlError, check_url, google_api_problem, id_token_problem

METADATA_SPELLINGS = [
    "http://169.254.169.254",
    "http://169.254.169.254./computeMetadata/v1",
    "http://metadata.google.internal",
    "http://METADATA.google.internal.",
    "http://metadata",
    "http://0xa9fea9fe",
    "http://2852039166",
    "http://0251.0376.0251.0376",
    "http://169.254.43518",
    "http://[::ffff:169.254.169.254]",
    "http://[::ffff:a9fe:a9fe]",
    "http://[2002:a9fe:a9fe::1]",
    "http://[64:ff9b::a9fe:a9fe]",
    "http://[fd20:ce::254]",
    "http://0.0.0.0:8000",
]
PRIVATE = [
    "http://10.0.0.5:8000",
    "http://172.16.3.4",
    "http://192.168.1.10",
    "http://100.64.0.1",
    "http://169.254.1.1",
    "http://[fe80::1]",
    "http://[fd00::1]",
    "http://[::ffff:10.0.0.1]",
    "http://0x0a000001",
    "http://167772161",
]
LOOPBACK = [
    "http://127.0.0.1:8000",
    "http://localhost:8000",
    "http://[::1]:8000",
    "http://127.1",
    "http://[::ffff:127.0.0.1]",
]


def no_dns(_host: str) -> list[str]:
    raise AssertionError("a literal address must not be looked up")


@pytest.mark.parametrize("url", METADATA_SPELLINGS)
def test_the_metadata_server_is_refused_in_every_spelling_even_with_the_flag(url: str) -> None:
    with pytest.raises(UnsafeUrlError, match=r"metadata server|unspecified"):
        check_url(url, flag="--url", allow_private=True, resolve=lambda _h: [])


@pytest.mark.parametrize("url", PRIVATE)
def test_private_and_link_local_addresses_need_the_flag(url: str) -> None:
    with pytest.raises(UnsafeUrlError, match="--allow-private-url"):
        check_url(url, flag="--url", allow_private=False, resolve=no_dns)
    check_url(url, flag="--url", allow_private=True, resolve=no_dns)


@pytest.mark.parametrize("url", LOOPBACK)
def test_loopback_is_allowed_without_the_flag(url: str) -> None:
    """Local servers, `kubectl port-forward` and the TPU ssh tunnel: the key stays on the machine."""
    check_url(url, flag="--url", allow_private=False, resolve=no_dns)


def test_a_name_is_judged_by_every_address_it_resolves_to() -> None:
    """`169.254.169.254.nip.io` is a name for the metadata server; a public name is fine."""
    with pytest.raises(UnsafeUrlError, match=r"resolves to 169\.254\.169\.254"):
        check_url(
            "http://sneaky.example", flag="--url", allow_private=True, resolve=lambda _h: ["8.8.8.8", "169.254.169.254"]
        )
    with pytest.raises(UnsafeUrlError, match="--allow-private-url"):
        check_url("http://intranet.example", flag="--url", allow_private=False, resolve=lambda _h: ["10.1.2.3"])
    check_url("https://svc-uc.a.run.app", flag="--url", allow_private=False, resolve=lambda _h: ["34.143.72.2"])


def test_the_cli_refuses_the_metadata_server_before_any_request(capsys: pytest.CaptureFixture[str]) -> None:
    """Exit 2 with the reason; nothing is sent (the address is judged before a client exists)."""
    code = cli.main(["health", "--url", "http://169.254.169.254", "--auth", "none", "--wait", "0"])
    assert code == 2
    assert "metadata server" in capsys.readouterr().err


def test_the_cli_refuses_a_private_url_without_the_flag(capsys: pytest.CaptureFixture[str]) -> None:
    code = cli.main(["metrics", "--url", "http://10.0.0.5:8000", "--auth", "none"])
    assert code == 2
    assert "--allow-private-url" in capsys.readouterr().err


def test_the_typed_options_carry_the_flag() -> None:
    """Tools and promote build TargetOptions, not argv: the same guard, the same opt-in."""
    with pytest.raises(UsageError, match="--allow-private-url"):
        resolve_target(TargetOptions(url="http://10.0.0.5:8000"), resolve=no_dns)
    assert resolve_target(TargetOptions(url="http://10.0.0.5:8000", allow_private_url=True), resolve=no_dns).base_url


def test_a_google_id_token_goes_only_to_its_own_audience() -> None:
    """`--audience https://victim.run.app --url https://elsewhere` handed a stranger a token the victim
    accepts; refused before any token is fetched."""
    fetched: list[str] = []

    def fetch(audience: str) -> str:
        fetched.append(audience)
        return "token"

    stranger = Target(
        base_url="https://elsewhere.example",
        model=None,
        auth_kind=AuthKind.GOOGLE,
        source="url",
        audience_url="https://victim-uc.a.run.app",
    )
    with pytest.raises(UsageError, match=r"could replay it at victim-uc\.a\.run\.app"):
        auth_for_target(stranger, api_key_env=None, fetch_id_token=fetch)
    assert fetched == []
    assert id_token_problem("https://candidate---svc-uc.a.run.app", "https://svc-uc.a.run.app") is None
    assert id_token_problem("https://svc-uc.a.run.app", "https://svc-uc.a.run.app") is None
    assert id_token_problem("http://127.0.0.1:8080", "http://127.0.0.1:8080") is None
    assert "only over https" in str(id_token_problem("http://svc-uc.a.run.app", "http://svc-uc.a.run.app"))


@pytest.mark.parametrize(
    "url", ["http://[::ffff:169.254.169.254]/", "http://0xa9fea9fe/", "http://[64:ff9b::a9fe:a9fe]/"]
)
def test_the_mcp_guard_is_verifys_and_catches_encoded_forms_with_allow_any(url: str) -> None:
    """The MCP server's check uses verify's address rules: an encoded metadata address is refused even with
    --allow-any-url (which lifts only the allow-list)."""
    with pytest.raises(ToolError, match=r"metadata|link-local"):
        mcp_check_url(url, stack_endpoints=list, allow_any=True, resolve=lambda _h: [])


@pytest.mark.parametrize(
    ("url", "allowed"),
    [
        ("https://run.googleapis.com", True),
        ("https://us-central1-run.googleapis.com", True),
        ("http://127.0.0.1:8123", True),
        ("http://run.googleapis.com", False),
        ("https://run.googleapis.com.evil.example", False),
        ("https://169.254.169.254", False),
        ("https://evil.example", False),
    ],
)
def test_the_cloud_run_api_flag_gets_a_token_only_if_it_is_googles(url: str, allowed: bool) -> None:
    """`verify promote --cloud-run-api URL` sends the user's Google access token: only Google's API (or a local
    fake, as the tests use) may receive it."""
    assert (google_api_problem(url, flag="--cloud-run-api") is None) is allowed
