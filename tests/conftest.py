"""Shared fixtures: Pulumi's mocks (recording every registration) and rendering of whole stacks.

Every test runs with fresh recording mocks installed (autouse), so a component constructed in a test
registers into `pulumi_capture` and never reaches a real engine.
"""

from __future__ import annotations

import asyncio
import copy
import functools
import os
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from preview.capture import Capture, install_mocks, run_program, run_registrations
from preview.stack_file import StackConfig, read_stack_config

# `live_server`: the real vLLM CPU server of the live tests (skipped unless one is named or started).
pytest_plugins = ["tests.live.fixtures"]

ROOT = Path(__file__).resolve().parent.parent
TEST_PROJECT = "gemma-serving"
TEST_GCP_PROJECT = "test-project"


def _ensure_event_loop() -> None:
    """Pulumi's mocks create futures on the current event loop; an async test before (pytest-asyncio
    closes its loop and sets none) leaves the main thread without one."""
    policy = asyncio.get_event_loop_policy()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            usable = not policy.get_event_loop().is_closed()
    except RuntimeError:
        usable = False
    if not usable:
        asyncio.set_event_loop(asyncio.new_event_loop())


# For a test that runs the preview in process more than once (each run may leave the thread without a loop).
ensure_event_loop = _ensure_event_loop


@pytest.fixture(autouse=True)
def _console_width_unset(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tables are asserted as verify prints them into a pipe (120 columns), whatever the shell exported.

    A COLUMNS in the environment changes where rich wraps a cell (80 columns split words such as
    `gcsfuse-permission-denied` across lines). Importing GNU readline (pytest's debugger support does)
    sets COLUMNS=80 in the C environment, unseen by os.environ but inherited by every child process:
    pytest-xdist's workers start with it. Deleting it here clears both, for this process and its children.
    """
    monkeypatch.delenv("COLUMNS", raising=False)


# `gcloud` as a machine with no account logged in answers it (Google Cloud SDK 528.0.0).
LOGGED_OUT_GCLOUD = """#!/bin/sh
if [ "$1 $2" = "config get-value" ]; then echo "(unset)" >&2; exit 0; fi
echo "ERROR: (gcloud.$1.$2) You do not currently have an active account selected." >&2
exit 1
"""


@pytest.fixture(scope="session")
def _logged_out_gcloud(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("logged-out-gcloud")
    (folder / "gcloud").write_text(LOGGED_OUT_GCLOUD)
    (folder / "gcloud").chmod(0o755)
    return folder


@pytest.fixture(autouse=True)
def _gcloud_logged_out(monkeypatch: pytest.MonkeyPatch, _logged_out_gcloud: Path) -> None:
    """No test reaches the gcloud of the machine it runs on, nor the account logged in there.

    `verify status` probes a ready Cloud Run revision with a Google ID token, which it asks gcloud for when
    google-auth finds none: in a test, a developer's logged-in gcloud would hand over their own token for
    the run.app URL in a fixture, and each call of the real gcloud cost half a second of CPU. This gcloud
    is logged out on every machine; a test that puts a gcloud of its own (or none) on PATH still does.
    """
    monkeypatch.setenv("PATH", f"{_logged_out_gcloud}{os.pathsep}{os.environ.get('PATH', os.defpath)}")


@pytest.fixture(autouse=True)
def pulumi_capture() -> Capture:
    """Fresh recording mocks for every test."""
    _ensure_event_loop()
    return install_mocks(project=TEST_PROJECT, stack="test", config={"gcp:project": TEST_GCP_PROJECT})


@pytest.fixture
def register(pulumi_capture: Capture) -> Callable[[Callable[[], object]], Capture]:
    """Run a function that creates resources to completion; returns what was registered."""

    def run(body: Callable[[], object]) -> Capture:
        return run_registrations(body, pulumi_capture)

    return run


def stack_config(stack: str, overrides: dict[str, str] | None = None) -> StackConfig:
    config = read_stack_config(ROOT, stack)
    config.values.update(overrides or {})
    return config


def render_stack(
    stack: str, overrides: dict[str, str] | None = None, *, stack_state: dict[str, Any] | None = None
) -> Capture:
    """The whole program for one stack file (optionally with config overrides), as the preview runs it.

    ``stack_state`` is what the stack's last update exported (default: preview.capture.OFFLINE_STACK_STATE).
    A shipped stack file as it is (no overrides, default state) is rendered once per session and each
    caller gets its own copy, so a test that changes what it got cannot change what another test reads.
    """
    if overrides is None and stack_state is None:
        return copy.deepcopy(_render_shipped_stack(stack))
    return _render(stack, overrides, stack_state)


def render_stack_at(root: Path, stack: str) -> Capture:
    """A stack file a test wrote elsewhere (its own Pulumi.yaml beside it), rendered as the preview renders it."""
    _ensure_event_loop()
    config = read_stack_config(root, stack)
    return run_program(
        ROOT / "__main__.py", project=config.project, stack=stack, config=config.values, secret_keys=config.secret_keys
    )


@functools.cache
def _render_shipped_stack(stack: str) -> Capture:
    """Deterministic (no clock, no network, no state): some thirty tests read the same three plans."""
    return _render(stack, None, None)


def _render(stack: str, overrides: dict[str, str] | None, stack_state: dict[str, Any] | None) -> Capture:
    # Module-scoped fixtures render before the autouse fixture runs: an async test before may have left
    # no event loop.
    _ensure_event_loop()
    config = stack_config(stack, overrides)
    return run_program(
        ROOT / "__main__.py",
        project=config.project,
        stack=stack,
        config=config.values,
        secret_keys=config.secret_keys,
        stack_state=stack_state,
    )
