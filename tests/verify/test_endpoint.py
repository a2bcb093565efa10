"""Target resolution: a stack's outputs or a URL become the same ``Target``; bad input exits 2."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from serving.outputs import DeployedOutputs
from tests.fake_pulumi import FakeStackOutputs
from verify import UsageError
from verify.endpoint import (
    AuthKind,
    TargetOptions,
    TimeoutOptions,
    resolve_target,
    target_from_outputs,
    target_from_url,
)
from verify.endpoint.cli import add_target_arguments, target_options
from verify.streaming import default_deadline_s

L4_OUTPUTS = {
    "endpoint": "https://gemma-l4-abc123-uc.a.run.app/",
    "servedModelName": "gemma-4-12b",
    "authKind": "google-id-token",
    "platform": "cloud-run",
    "accelerator": "nvidia-l4",
    "maxModelLen": 8192,
    "maxNumSeqs": 64,
    "concurrency": 64,
    "maxInstances": 2,
    "modelBucket": "an output verify does not read",
}


def parse(*argv: str) -> TargetOptions:
    parser = argparse.ArgumentParser()
    add_target_arguments(parser)
    return target_options(parser.parse_args(list(argv)))


@pytest.mark.parametrize(
    ("url", "extra", "expected"),
    [
        ("https://gemma-l4-abc123-uc.a.run.app", (), AuthKind.GOOGLE),
        ("http://127.0.0.1:8000", (), AuthKind.NONE),
        ("http://localhost:8000/", (), AuthKind.NONE),
        ("http://10.128.0.7:8000", ("--allow-private-url",), AuthKind.NONE),
        ("http://34.1.2.3:8000", (), AuthKind.NONE),
        ("http://34.1.2.3:8000", ("--api-key-env", "MY_KEY"), AuthKind.API_KEY),
        ("https://gemma-l4-abc123-uc.a.run.app", ("--auth", "none"), AuthKind.NONE),
        ("http://127.0.0.1:8000", ("--auth", "google"), AuthKind.GOOGLE),
    ],
)
def test_url_auth_auto_and_override(url: str, extra: tuple[str, ...], expected: AuthKind) -> None:
    """A Cloud Run URL must get an ID token by default (else every request 401s), a local one none."""
    target = resolve_target(parse("--url", url, *extra))
    assert target.auth_kind is expected
    assert not target.base_url.endswith("/")
    assert target.source == "url"


def test_url_without_model_leaves_discovery_to_the_checks() -> None:
    """No --model: the target must say "unknown" rather than invent a name."""
    assert resolve_target(parse("--url", "http://127.0.0.1:8000")).model is None


@pytest.mark.parametrize("url", ["127.0.0.1:8000", "ftp://host/", "http://", "http://host:8000/?x=1"])
def test_bad_url_is_a_usage_error_naming_the_flag(url: str) -> None:
    """A URL without scheme or host must fail before any request, naming --url."""
    with pytest.raises(UsageError, match="--url"):
        target_from_url(url, model=None, auth=None, api_key_env_given=False)


def test_audience_is_the_service_url_without_path() -> None:
    """Cloud Run rejects tokens whose audience carries a path; the audience must be scheme://host."""
    target = target_from_url("https://svc-uc.a.run.app/v1/", model=None, auth=None, api_key_env_given=False)
    assert target.base_url == "https://svc-uc.a.run.app/v1"
    assert target.audience == "https://svc-uc.a.run.app"


def test_a_tagged_revision_url_takes_the_service_urls_token() -> None:
    """Guards against a 401 from a tagged revision URL (https://candidate---<host>): with --audience the
    ID token is minted for the service's own URL while requests go to the tag's."""
    args = parse(
        "--url",
        "https://candidate---svc-uc.a.run.app",
        "--audience",
        "https://svc-uc.a.run.app/",
    )
    target = resolve_target(args)
    assert target.base_url == "https://candidate---svc-uc.a.run.app"
    assert target.auth_kind is AuthKind.GOOGLE
    assert target.audience == "https://svc-uc.a.run.app"


def test_stack_outputs_become_a_target() -> None:
    """The outputs named in docs/architecture.md must all arrive in the Target, typed."""
    pulumi = FakeStackOutputs({"l4": L4_OUTPUTS})
    target = resolve_target(parse("--stack", "l4"), pulumi=pulumi)
    assert pulumi.read == ["l4"]
    assert target.base_url == "https://gemma-l4-abc123-uc.a.run.app"
    assert target.model == "gemma-4-12b"
    assert target.auth_kind is AuthKind.GOOGLE
    assert (target.platform, target.accelerator) == ("cloud-run", "nvidia-l4")
    assert (target.max_model_len, target.max_num_seqs) == (8192, 64)
    assert target.admission_limit == 128
    assert target.source == "stack l4"


def test_stack_api_key_output_and_overrides() -> None:
    """A TPU stack's api-key auth must carry its secret id; --model and --auth override the stack."""
    outputs = {
        "endpoint": "http://10.0.0.5:8000",
        "servedModelName": "gemma-4-12b",
        "authKind": "api-key",
        "apiKeySecret": "vllm-api-key",
        "platform": "tpu",
        "accelerator": "tpu-v6e",
    }
    pulumi = FakeStackOutputs({"tpu-v6e": outputs})
    target = resolve_target(parse("--stack", "tpu-v6e"), pulumi=pulumi)
    assert (target.auth_kind, target.api_key_secret) == (AuthKind.API_KEY, "vllm-api-key")
    assert target.admission_limit is None
    overridden = resolve_target(parse("--stack", "tpu-v6e", "--model", "other", "--auth", "none"), pulumi=pulumi)
    assert (overridden.model, overridden.auth_kind) == ("other", AuthKind.NONE)


def test_stack_missing_output_names_it() -> None:
    """A stack that does not export servedModelName must say so, not fail later with a KeyError."""
    outputs = {key: value for key, value in L4_OUTPUTS.items() if key != "servedModelName"}
    with pytest.raises(UsageError, match="servedModelName: Field required"):
        resolve_target(parse("--stack", "l4"), pulumi=FakeStackOutputs({"l4": outputs}))


def test_stack_unknown_auth_kind_is_rejected() -> None:
    """An authKind verify does not know must not silently become "none"."""
    with pytest.raises(UsageError, match="authKind"):
        resolve_target(parse("--stack", "l4"), pulumi=FakeStackOutputs({"l4": {**L4_OUTPUTS, "authKind": "mtls"}}))


def test_pulumi_failure_is_a_usage_error_with_its_message() -> None:
    """`pulumi` failing (no such stack, not logged in) must surface its own message."""
    with pytest.raises(UsageError, match="no stack named 'l5' found"):
        resolve_target(parse("--stack", "l5"), pulumi=FakeStackOutputs({"l4": L4_OUTPUTS}))


def test_a_malformed_output_verify_reads_is_named() -> None:
    """Guards against a stack whose maxNumSeqs is not a number reaching the checks as "unknown" silently."""
    with pytest.raises(UsageError, match="maxNumSeqs: Input should be a valid integer"):
        resolve_target(parse("--stack", "l4"), pulumi=FakeStackOutputs({"l4": {**L4_OUTPUTS, "maxNumSeqs": "many"}}))


def test_missing_pulumi_binary_says_how_to_proceed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without the Pulumi CLI the user must be told so, and offered --url."""
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(UsageError, match=r"`pulumi` is not on PATH.*--url"):
        resolve_target(parse("--stack", "l4"))


@pytest.mark.parametrize("flag", ["--timeout", "--connect-timeout"])
def test_timeouts_must_be_positive(flag: str, capsys: pytest.CaptureFixture[str]) -> None:
    """A zero or negative timeout must be refused by name, not turn into "no timeout"."""
    with pytest.raises(SystemExit) as exited:
        parse("--url", "http://127.0.0.1:8000", flag, "0")
    assert exited.value.code == 2
    assert flag in capsys.readouterr().err


def test_stack_and_url_are_exclusive(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        parse("--stack", "l4", "--url", "http://127.0.0.1:8000")
    assert "not allowed with" in capsys.readouterr().err


def test_stack_billing_output_reaches_the_target() -> None:
    """Bench prices what the stack bills (its `billing` output): the target must carry it from the outputs."""
    billing = {"kind": "cloud-run", "accelerator": "nvidia-l4", "region": "us-east4", "cpu": 8, "memoryGib": 32}
    target = target_from_outputs("l4", DeployedOutputs.read({**L4_OUTPUTS, "billing": billing}))
    assert target.billing == billing
    assert target_from_outputs("l4", DeployedOutputs.read(L4_OUTPUTS)).billing is None


def test_target_options_name_exactly_one_source() -> None:
    """A caller without argparse (an MCP tool, promote) must not build options that name both a stack and
    a URL, or neither: resolve_target would silently prefer one."""
    with pytest.raises(ValueError, match="exactly one of stack"):
        TargetOptions(stack="l4", url="http://127.0.0.1:8000")
    with pytest.raises(ValueError, match="exactly one of stack"):
        TargetOptions()


def test_typed_target_options_resolve_like_the_flags() -> None:
    """The typed options and the flags must lead to the same target, so a tool calling the function and
    a user typing the command check the same endpoint the same way."""
    typed = resolve_target(
        TargetOptions(url="https://candidate---svc-uc.a.run.app", audience="https://svc-uc.a.run.app/", model="m")
    )
    flagged = resolve_target(
        parse(
            "--url", "https://candidate---svc-uc.a.run.app", "--audience", "https://svc-uc.a.run.app/", "--model", "m"
        )
    )
    assert typed == flagged
    assert typed.auth_kind is AuthKind.GOOGLE
    assert typed.audience == "https://svc-uc.a.run.app"


def test_request_deadline_defaults_from_the_silence_timeout() -> None:
    """--deadline wins when given; without it a request may take --timeout plus time per token asked for."""
    assert TimeoutOptions(deadline_s=7.0).request_deadline_s(512) == 7.0
    default = TimeoutOptions(read_s=30.0).request_deadline_s(512)
    assert default == default_deadline_s(512, 30.0)
    assert default > 30.0
