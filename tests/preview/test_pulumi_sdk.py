"""The SDK internals behind preview/pulumi_sdk.py still exist and behave as the offline plan assumes.

Why: a Pulumi SDK upgrade that moves one of them would otherwise break `make preview`, the policy tests
and half the suite with an AttributeError deep in a run; this test fails first and names the version.
"""

from __future__ import annotations

import traceback
from typing import Any

import pulumi
import pytest

from preview import pulumi_sdk
from preview.capture import install_mocks, run_registrations


def test_sdk_internals_are_where_the_adapter_expects_them() -> None:
    """Each internal is present with the shape we use, or the message names the installed SDK."""
    where = f"pulumi {pulumi_sdk.SDK_VERSION}: update preview/pulumi_sdk.py"
    assert isinstance(pulumi_sdk.SECRET_SIGNATURE, str), where
    assert len(pulumi_sdk.SECRET_SIGNATURE) == 32, where
    assert isinstance(pulumi_sdk.SIGNATURE_KEY, str), where
    assert isinstance(pulumi_sdk.UNKNOWN, str), where
    assert callable(pulumi_sdk.run_pulumi_func), where
    assert callable(pulumi_sdk.set_all_config), where
    assert callable(pulumi_sdk.SDK_STACK_TRACE), where


def test_a_program_runs_under_the_adapter_and_its_exports_resolve() -> None:
    """The SDK's in-process driver still runs a program to completion and yields its exports."""
    capture = install_mocks(project="gemma-serving", stack="sdk-check", config={})

    def body() -> None:
        pulumi.export("answer", pulumi.Output.from_input("42"))
        pulumi.export("secret", pulumi.Output.secret("s"))

    run_registrations(body, capture)
    where = f"pulumi {pulumi_sdk.SDK_VERSION}: update preview/pulumi_sdk.py"
    assert capture.outputs["answer"] == "42", where
    assert capture.outputs["secret"][pulumi_sdk.SECRET_SIGNATURE], where


def test_a_registration_under_the_mocks_walks_no_stack(monkeypatch: pytest.MonkeyPatch) -> None:
    """The SDK's stack trace for each resource was a third of a render's CPU, and nothing under the mocks
    reads it: if an SDK release builds it somewhere else, every plan and test gets slower without a word."""
    capture = install_mocks(project="gemma-serving", stack="sdk-check", config={})
    walks: list[object] = []
    extract_stack = traceback.extract_stack

    def counted(*args: Any, **kwargs: Any) -> traceback.StackSummary:
        walks.append(args)
        return extract_stack(*args, **kwargs)

    monkeypatch.setattr(traceback, "extract_stack", counted)
    run_registrations(lambda: pulumi.ComponentResource("test:sdk:Check", "check"), capture)
    assert [resource.name for resource in capture.resources] == ["check"]
    assert not walks, f"pulumi {pulumi_sdk.SDK_VERSION} walked the stack: update preview/pulumi_sdk.py"
