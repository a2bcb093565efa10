"""Shared fixtures: Pulumi's mocks (recording every registration) and rendering of whole stacks.

Every test runs with fresh recording mocks installed (autouse), so a component constructed in a test
registers into `pulumi_capture` and never reaches a real engine.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import json
import os
import pickle
import threading
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from preview.capture import Capture, install_mocks, run_program, run_registrations
from preview.stack_file import StackConfig, read_stack_config
from tests.shared_plans import SharedPlans, run_folder

# `live_server`: the real vLLM CPU server of the live tests (skipped unless one is named or started).
pytest_plugins = ["tests.live.fixtures", "tests.xdist_groups", "tests.worker_exit"]

ROOT = Path(__file__).resolve().parent.parent
TEST_PROJECT = "gemma-serving"
TEST_GCP_PROJECT = "test-project"


class _PulumiLoops:
    """The event loops Pulumi's mocks run on in this test process, each closed once, at the end of the session.

    Why: the mocks need a current event loop in every thread they touch, and each loop left to the garbage
    collector unclosed warns (`ResourceWarning: unclosed event loop`, with its two self-pipe sockets), which
    `filterwarnings = error` turns into a failure of whichever test happens to be running when the collector
    finds it, on any worker, long after the test that leaked it. Three sources leaked one:
    - the main thread: pytest-asyncio ends every async test with no current loop (it sets None), so the next
      plan needed a new loop, and the one before it was dropped unclosed;
    - the mocks' worker threads: the SDK sends each registration to the loop's default executor, and its
      MockMonitor gives each worker thread a loop of its own (pulumi/runtime/sync_await.py
      `_ensure_event_loop`), dropped unclosed when the executor's threads exit;
    - a plan run in a worker thread (`asyncio.to_thread`), whose new loop was dropped with the thread.
    Here the main thread has one loop for the whole session, each other thread gets one on first use, and
    each loop's default executor creates its threads' loops itself: every loop is kept and closed at the end.
    """

    def __init__(self) -> None:
        self._loops: list[asyncio.AbstractEventLoop] = []
        self._executors: list[concurrent.futures.ThreadPoolExecutor] = []
        self._main: asyncio.AbstractEventLoop | None = None

    def _new_loop(self) -> asyncio.AbstractEventLoop:
        loop = asyncio.new_event_loop()
        executor = concurrent.futures.ThreadPoolExecutor(thread_name_prefix="pulumi-mocks", initializer=self._own_loop)
        loop.set_default_executor(executor)
        self._loops.append(loop)
        self._executors.append(executor)
        return loop

    def _own_loop(self) -> None:
        """A new executor thread's loop, set before the SDK's mocks look for one (they would make their own)."""
        asyncio.set_event_loop(self._new_loop())

    def ensure(self) -> None:
        """Give this thread a usable current loop (the session's in the main thread), or leave the one it has."""
        if _current_loop_usable():
            return
        if threading.current_thread() is threading.main_thread():
            self.install_main()
        else:
            asyncio.set_event_loop(self._new_loop())

    def install_main(self) -> None:
        """Make the session's loop the main thread's current one (asyncio's own default loop included)."""
        if self._main is None or self._main.is_closed():
            self._main = self._new_loop()
        asyncio.set_event_loop(self._main)

    def close(self) -> None:
        """Close every loop as `asyncio.run` closes its own: the plans' leftover tasks cancelled first."""
        for executor in self._executors:
            executor.shutdown(wait=True)
        for loop in self._loops:
            if loop.is_closed() or loop.is_running():
                continue
            leftover = asyncio.all_tasks(loop)
            for task in leftover:
                task.cancel()
            loop.run_until_complete(_settled(leftover))
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()
        self._loops.clear()
        self._executors.clear()
        self._main = None


async def _settled(tasks: set[asyncio.Task[Any]]) -> None:
    await asyncio.gather(*tasks, return_exceptions=True)


def _current_loop_usable() -> bool:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            return not asyncio.get_event_loop_policy().get_event_loop().is_closed()
    except RuntimeError:  # no current loop in this thread
        return False


_PULUMI_LOOPS = _PulumiLoops()


def _ensure_event_loop() -> None:
    """Pulumi's mocks create futures on the current event loop; an async test before (pytest-asyncio
    ends it with no current loop) leaves the main thread without one, and a worker thread has none."""
    _PULUMI_LOOPS.ensure()


# For a test that runs the preview in process more than once (each run may leave the thread without a loop).
ensure_event_loop = _ensure_event_loop


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> Iterator[None]:
    """Every test's fixtures, module- and session-scoped ones included, start with the session's loop current."""
    _PULUMI_LOOPS.install_main()
    return (yield)


@pytest.fixture(autouse=True, scope="session")
def _pulumi_loops_closed() -> Iterator[None]:
    """The loops are closed while the last test tears down, under the suite's warning filters."""
    yield
    _PULUMI_LOOPS.close()


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
    """One folder for the whole run (every xdist worker writes the same script, each by an atomic rename), so
    PATH, which keys the plans workers share (`render_stack`), reads the same in every worker."""
    folder = run_folder(tmp_path_factory) / "logged-out-gcloud"
    folder.mkdir(exist_ok=True)
    partial = folder / f"gcloud.{os.getpid()}"
    partial.write_text(LOGGED_OUT_GCLOUD)
    partial.chmod(0o755)
    partial.replace(folder / "gcloud")
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
    A plan is deterministic (no clock, no network, no state) given the stack file, the overrides, the state
    and the environment (`verify promote`'s run id is read from it; pytest's own variables, which name the
    test and the xdist worker, are not): each combination is rendered once per test run, shared by the
    xdist workers (tests/shared_plans.py; the GKE plans cost 0.2-0.4 s of CPU each, and a dozen files read
    the same ones), and each caller gets its own copy (unpickled from the stored plan: half the CPU of a
    deep copy), so a test that changes what it got cannot change what another test reads.
    """
    environment = sorted((name, value) for name, value in os.environ.items() if not name.startswith("PYTEST_"))
    key = json.dumps([overrides or None, stack_state, environment], sort_keys=True)
    capture: Capture = pickle.loads(_render_once(stack, key))  # noqa: S301 - pickled by this test run
    return capture


def render_stack_at(root: Path, stack: str) -> Capture:
    """A stack file a test wrote elsewhere (its own Pulumi.yaml beside it), rendered as the preview renders it."""
    _ensure_event_loop()
    config = read_stack_config(root, stack)
    return run_program(
        ROOT / "__main__.py", project=config.project, stack=stack, config=config.values, secret_keys=config.secret_keys
    )


_SHARED_PLANS = SharedPlans()


@pytest.fixture(autouse=True, scope="session")
def _plans_shared_by_workers(tmp_path_factory: pytest.TempPathFactory) -> None:
    folder = run_folder(tmp_path_factory) / "plans"
    folder.mkdir(exist_ok=True)
    _SHARED_PLANS.folder = folder


@functools.lru_cache(maxsize=128)
def _render_once(stack: str, key: str) -> bytes:
    overrides, stack_state, _environment = json.loads(key)
    return _SHARED_PLANS.get(f"{stack}\n{key}", lambda: _render(stack, overrides, stack_state))


def _render(stack: str, overrides: dict[str, str] | None, stack_state: dict[str, Any] | None) -> Capture:
    # A test may have left this thread without a loop (an `asyncio.run` of its own), or it is a worker thread.
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
