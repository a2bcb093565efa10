"""The TPU VM's startup script, rendered from data with shell quoting.

Why this shape: the hand-made deployment rendered its script with `str.format` (once producing a script
that did nothing), put the Hugging Face token into instance metadata in plain text, and pip-installed
from git at every boot. Here the script is a fixed body (never formatted) preceded by a block of variable
assignments whose every value goes through `shlex.quote`, so no value can change the script's meaning;
JSON-valued vLLM flags pass through a bash array untouched.

What the script does at every boot (GCE runs `startup-script` metadata on each boot, as root):
1. reads the model bucket's name from instance metadata (`gemma-model-bucket`: the bucket is named by
   Google at creation, and keeping it out of the script lets the plan show the whole script) and syncs
   the checkpoint directories to the boot disk (`gcloud storage rsync`, which skips what is already
   there, so a reboot does not download the weights again);
2. reads the vLLM API key (and, if configured, a Hugging Face token) from Secret Manager with the VM's
   own service account, through the metadata server's token, into a root-only env file under /run (a
   tmpfs): the secret never appears in metadata or on any command line;
3. when the image lives in Artifact Registry (the stack's Docker Hub mirror, `<region>-docker.pkg.dev`),
   lets docker authenticate to that host as the VM's service account (`gcloud auth configure-docker`,
   whose credential helper asks the metadata server for a token at each pull; where the helper is not on
   PATH, a `docker login` with a metadata-server token passed on stdin), then replaces the container and
   starts the pinned `vllm/vllm-tpu` image, vLLM behind the route guard (serving/route_guard.py: the image's
   `python3` runs the launcher, which starts vLLM's CLI), with `--privileged --net=host --shm-size`, `--restart
   unless-stopped` (Docker restarts it if it exits) and the gcplogs log driver (container output goes to
   Cloud Logging); vLLM takes the key from `VLLM_API_KEY`, which is exactly
   `--api-key` (vllm/entrypoints/serve/middleware/register.py) without putting the key on a command line;
4. when the stack collects metrics, writes the collector's config and starts the collector container
   (the Google-Built OpenTelemetry Collector, serving/collectors.py) beside vLLM the same way (replaced at
   each boot, `--restart unless-stopped`, gcplogs); a collector that fails to start is logged and costs
   the dashboard its data, never the node its serving;
5. logs each step to the serial console / Cloud Logging and waits (bounded) for `/health`;
6. with a kept compile cache (`compileCache.keep`, serving/compile_cache.py): before vLLM starts, restores
   the XLA cache from the bucket's cache folder to the boot disk (mounted read-write into the container at
   `VLLM_XLA_CACHE_PATH`), and once `/health` answers, saves it back (`gcloud storage rsync`, which adds and
   replaces but deletes nothing). Either failing is logged and costs only the compile time. Without it the
   script has none of these lines.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from serving.compile_cache import TPU_CACHE_ENV, TPU_CONTAINER_CACHE_DIR, TPU_HOST_CACHE_DIR
from serving.container import MODEL_ROOT
from serving.gcp_names import bucket_path_problem
from serving.naming import TPU_COLLECTOR_CONTAINER, TPU_SERVING_CONTAINER

# Where the env file with secrets lives: /run is a tmpfs, so it never reaches the disk.
STATE_DIR = "/run/gemma-vllm"
# The instance-metadata key that carries the model bucket's name.
BUCKET_METADATA_KEY = "gemma-model-bucket"
# The marker after which the script is fixed text; tests source everything above it.
DATA_END_MARKER = "# --- end of rendered data ---"

_ENV_NAME = re.compile(r"^[A-Z_][A-Z0-9_]*$")
# Artifact Registry's Docker hosts (https://cloud.google.com/artifact-registry/docs/docker/names).
_ARTIFACT_REGISTRY_HOST = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*-docker\.pkg\.dev$")
_RESERVED_ENV = frozenset({"VLLM_API_KEY", "HF_TOKEN", TPU_CACHE_ENV})


# Where the collector's config lives on the VM (the body mounts it where otelcol-google reads its config).
COLLECTOR_CONFIG_FILE = "/etc/gemma-collector/config.yaml"


@dataclass(frozen=True)
class NodeCollector:
    """The metrics collector beside vLLM: a pinned image and its config (YAML, no secret in it)."""

    image: str
    config: str
    container_name: str = TPU_COLLECTOR_CONTAINER

    def __post_init__(self) -> None:
        if not self.image or any(ch.isspace() for ch in self.image):
            raise ValueError(f"collector image {self.image!r}: a non-empty reference without whitespace")
        if not self.config.strip():
            raise ValueError("collector config is empty")


@dataclass(frozen=True)
class StartupScriptSpec:
    """Everything the startup script needs, as plain values (none of them secret)."""

    project: str
    image: str
    # The full `vllm serve` argument list (model path first), as rendered by the stack's vLLM settings.
    serve_args: Sequence[str]
    # Checkpoint directories inside the bucket to bring onto the VM (the model, and a drafter if any).
    model_dirs: Sequence[str]
    api_key_secret: str
    port: int
    hf_token_secret: str | None = None
    # Where the serve arguments expect the checkpoints (mounted read-only into the container).
    model_root: str = MODEL_ROOT
    host_model_dir: str = "/var/lib/gemma-vllm/models"
    state_dir: str = STATE_DIR
    env: Mapping[str, str] = field(default_factory=dict)
    shm_size: str = "10gb"
    container_name: str = TPU_SERVING_CONTAINER
    ready_timeout_seconds: int = 1800
    # The metrics collector started beside vLLM; None: the stack collects nothing.
    collector: NodeCollector | None = None
    # The bucket prefix that keeps vLLM's XLA compile cache between boots (e.g. `compile-cache/xla/`); None:
    # not kept, and the script has no cache lines at all.
    compile_cache_prefix: str | None = None
    host_cache_dir: str = TPU_HOST_CACHE_DIR
    # What runs vLLM in the container: the route guard's launcher, `python3 -c <launcher> <config> serve`
    # (serving/route_guard.py); the serve arguments follow it. Its first word is the container's entrypoint.
    serving_command: Sequence[str] = ()

    def __post_init__(self) -> None:
        problems = [*self._arg_problems(), *self._path_problems()]
        if len(self.serving_command) < 2 or self.serving_command[-1] != "serve":
            problems.append(
                "serving_command: vLLM runs behind the route guard's launcher (`python3 -c <launcher> <config> "
                "serve`, serving/route_guard.py)"
            )
        if not self.image or any(ch.isspace() for ch in self.image):
            problems.append(f"image {self.image!r}: a non-empty reference without whitespace")
        for name, value in self.env.items():
            if not _ENV_NAME.match(name) or name in _RESERVED_ENV:
                problems.append(f"env {name!r}: use UPPER_CASE names other than {sorted(_RESERVED_ENV)}")
            if "\n" in value:
                problems.append(f"env {name}: values cannot contain newlines")
        if problems:
            raise ValueError("startup script: " + "; ".join(problems))

    @property
    def env_file(self) -> str:
        return f"{self.state_dir}/vllm.env"

    @property
    def registry_host(self) -> str:
        """The Artifact Registry host docker must log in to for this image, or '' (e.g. Docker Hub)."""
        return artifact_registry_host(self.image) or ""

    def _arg_problems(self) -> list[str]:
        args = list(self.serve_args)
        problems: list[str] = []
        if not args or args[0].startswith("-"):
            problems.append("serve_args must start with the model path")
        elif not args[0].startswith(self.model_root.rstrip("/") + "/"):
            problems.append(f"the model path {args[0]!r} is not under {self.model_root}, where the weights are mounted")
        if any(arg == "--api-key" or arg.startswith("--api-key=") for arg in args):
            problems.append(
                "--api-key must not be an argument (it would show in `ps` and in metadata); the key "
                "comes from Secret Manager through the env file"
            )
        if "--port" in args:
            index = args.index("--port")
            if index + 1 >= len(args) or args[index + 1] != str(self.port):
                problems.append(f"--port in serve_args differs from the node's port {self.port}")
        return problems

    def _path_problems(self) -> list[str]:
        problems: list[str] = []
        if not self.model_dirs:
            problems.append("model_dirs is empty: nothing to bring onto the VM")
        problems.extend(
            f"model dir {directory!r} must be a relative path inside the bucket"
            for directory in self.model_dirs
            if bucket_path_problem(directory)
        )
        prefix = self.compile_cache_prefix
        if prefix is not None and (not prefix.endswith("/") or bucket_path_problem(prefix.rstrip("/"))):
            problems.append(f"compile_cache_prefix {prefix!r} must be a relative path inside the bucket ending in '/'")
        paths = {
            "model_root": self.model_root,
            "host_model_dir": self.host_model_dir,
            "state_dir": self.state_dir,
            "host_cache_dir": self.host_cache_dir,
        }
        for key, path in paths.items():
            if not path.startswith("/") or ":" in path:
                problems.append(f"{key} {path!r} must be an absolute path without ':'")
        return problems


def artifact_registry_host(image: str) -> str | None:
    """`us-east5-docker.pkg.dev` for an image in Artifact Registry; None for any other registry."""
    host, slash, _ = image.partition("/")
    return host if slash and _ARTIFACT_REGISTRY_HOST.match(host) else None


def docker_run_argv(spec: StartupScriptSpec) -> list[str]:
    """The arguments after `docker`: the container exactly as it will run."""
    argv = [
        "run",
        "--detach",
        "--name",
        spec.container_name,
        "--restart",
        "unless-stopped",
        "--privileged",
        "--net",
        "host",
        "--shm-size",
        spec.shm_size,
        "--volume",
        "/dev/shm:/dev/shm",  # noqa: S108 - the TPU runtime's shared memory, as Google's vLLM guide runs it
        "--volume",
        f"{spec.host_model_dir}:{spec.model_root}:ro",
        "--env-file",
        spec.env_file,
        "--log-driver",
        "gcplogs",
    ]
    if spec.compile_cache_prefix is not None:
        # Read-write: vLLM adds what it compiles; the script saves it to the bucket once vLLM serves.
        argv += [
            "--volume",
            f"{spec.host_cache_dir}:{TPU_CONTAINER_CACHE_DIR}",
            "--env",
            f"{TPU_CACHE_ENV}={TPU_CONTAINER_CACHE_DIR}",
        ]
    for name, value in sorted(spec.env.items()):
        argv += ["--env", f"{name}={value}"]
    # The image's own entrypoint is not relied upon: run the route guard's launcher, then vLLM's arguments.
    entrypoint, *command = spec.serving_command
    argv += ["--entrypoint", entrypoint, spec.image, *command, *spec.serve_args]
    return argv


def _assign(name: str, value: str | int) -> str:
    return f"{name}={shlex.quote(str(value))}"


def _assign_array(name: str, values: Sequence[str]) -> str:
    """One line per flag and its value, so a reviewer reads the command as it will run."""
    if not values:
        return f"{name}=()"
    lines: list[list[str]] = []
    for value in values:
        follows_flag = bool(lines) and len(lines[-1]) == 1 and lines[-1][0].startswith("--")
        if follows_flag and not value.startswith("-"):
            lines[-1].append(value)
        else:
            lines.append([value])
    items = "\n".join("  " + " ".join(shlex.quote(value) for value in line) for line in lines)
    return f"{name}=(\n{items}\n)"


def render_startup_script(spec: StartupScriptSpec) -> str:
    """The whole script: a header of quoted assignments, then the fixed body."""
    data = [
        _assign("PROJECT", spec.project),
        _assign("BUCKET_METADATA_KEY", BUCKET_METADATA_KEY),
        _assign_array("MODEL_DIRS", list(spec.model_dirs)),
        _assign("HOST_MODEL_DIR", spec.host_model_dir),
        _assign("API_KEY_SECRET", spec.api_key_secret),
        _assign("HF_TOKEN_SECRET", spec.hf_token_secret or ""),
        _assign("STATE_DIR", spec.state_dir),
        _assign("ENV_FILE", spec.env_file),
        _assign("IMAGE", spec.image),
        _assign("REGISTRY_HOST", spec.registry_host),
        _assign("CONTAINER", spec.container_name),
        _assign("PORT", spec.port),
        _assign("READY_TIMEOUT_SECONDS", spec.ready_timeout_seconds),
        _assign("COLLECTOR_IMAGE", spec.collector.image if spec.collector else ""),
        _assign("COLLECTOR_CONTAINER", spec.collector.container_name if spec.collector else ""),
        _assign("COLLECTOR_CONFIG_FILE", COLLECTOR_CONFIG_FILE),
        _assign("COLLECTOR_CONFIG", spec.collector.config if spec.collector else ""),
        # The launcher's Python source is one single-quoted word: its `$` and `\` are Python's, not the shell's.
        "# shellcheck disable=SC1003,SC2016",
        _assign_array("DOCKER_RUN_ARGS", docker_run_argv(spec)),
    ]
    body = _BODY
    if spec.compile_cache_prefix is not None:
        data += [_assign("CACHE_PREFIX", spec.compile_cache_prefix), _assign("HOST_CACHE_DIR", spec.host_cache_dir)]
        body = with_compile_cache(body)
    return "\n".join([_PREAMBLE, *data, DATA_END_MARKER, body])


def with_compile_cache(body: str) -> str:
    """The fixed body with the cache's fixed functions, and main() calling them around vLLM's start."""
    steps = {
        "main() {\n": _CACHE_FUNCTIONS + "main() {\n",
        "  if ! retry 5 start_container; then\n": _CACHE_RESTORE + "  if ! retry 5 start_container; then\n",
        "  wait_until_ready\n}\n": "  wait_until_ready\n" + _CACHE_SAVE + "}\n",
    }
    for anchor, replacement in steps.items():
        if body.count(anchor) != 1:
            raise ValueError(
                f"startup script: the compile-cache step's anchor {anchor.strip()!r} is not in the body once"
            )
        body = body.replace(anchor, replacement)
    return body


# Fixed text, spliced in only for a stack that keeps its compile cache.
_CACHE_FUNCTIONS = r"""# vLLM's XLA compile cache lives in the bucket's cache folder between runs (compileCache.keep).
# The node's account may write that folder only (objectUser on the managed folder); weights stay read-only.
restore_compile_cache() {
  install -d -m 0755 "$HOST_CACHE_DIR" || return 1
  log "restoring the compile cache from gs://$MODEL_BUCKET/$CACHE_PREFIX"
  gcloud storage rsync --recursive "gs://$MODEL_BUCKET/$CACHE_PREFIX" "$HOST_CACHE_DIR"
}

# Saved once vLLM answers /health, when this start's compiles are on the disk. rsync adds and replaces;
# it deletes nothing (old entries expire by the bucket's lifecycle rule).
save_compile_cache() {
  if ! curl --silent --fail --max-time 5 "http://127.0.0.1:$PORT/health" > /dev/null; then
    log "vLLM is not ready: the compile cache is not saved"
    return 0
  fi
  log "saving the compile cache to gs://$MODEL_BUCKET/$CACHE_PREFIX"
  gcloud storage rsync --recursive "$HOST_CACHE_DIR" "gs://$MODEL_BUCKET/$CACHE_PREFIX"
}

"""
_CACHE_RESTORE = r"""  if ! restore_compile_cache; then
    log "no compile cache restored (a first start, or the folder is not readable): vLLM compiles from scratch"
  fi
"""
_CACHE_SAVE = r"""  if ! save_compile_cache; then
    log "could not save the compile cache to gs://$MODEL_BUCKET/$CACHE_PREFIX: the next start compiles again"
  fi
"""


_PREAMBLE = """#!/bin/bash
# gemma-serving: vLLM on a TPU VM. Rendered from data by components/tpu/startup_script.py (every value
# below is shell-quoted; nothing after the data block is generated). Runs as root at every boot.
# Holds no secret: the API key is read from Secret Manager on the VM.
set -euo pipefail
"""

# Fixed text: never passed through str.format or f-strings. The variables come from the data block.
_BODY = r"""
log() {
  # startup-script output reaches the serial console and Cloud Logging through the guest agent.
  echo "gemma-vllm-startup: $*" >&2
}

# metadata_attribute KEY: a value the deployment put in this VM's instance metadata.
metadata_attribute() {
  curl --silent --fail --max-time 10 --header "Metadata-Flavor: Google" \
    "http://metadata.google.internal/computeMetadata/v1/instance/attributes/$1"
}

# retry ATTEMPTS COMMAND...: run COMMAND until it succeeds, waiting longer after each failure.
retry() {
  local attempts=$1 n=1
  shift
  until "$@"; do
    if (( n >= attempts )); then
      return 1
    fi
    log "$1 failed (attempt $n of $attempts); retrying"
    sleep $(( n * 15 ))
    n=$(( n + 1 ))
  done
}

# fetch_secret SECRET: print the latest version of a Secret Manager secret, using the VM's service
# account through the metadata server. The value goes to stdout only (never argv, never metadata).
fetch_secret() {
  python3 - "$PROJECT" "$1" <<'PY'
import base64
import json
import sys
import urllib.request

project, secret = sys.argv[1], sys.argv[2]
token_request = urllib.request.Request(
    "http://metadata.google.internal/computeMetadata/v1/instance/service-accounts/default/token",
    headers={"Metadata-Flavor": "Google"},
)
with urllib.request.urlopen(token_request, timeout=10) as answer:
    token = json.load(answer)["access_token"]
name = secret if secret.startswith("projects/") else "projects/" + project + "/secrets/" + secret
access = urllib.request.Request(
    "https://secretmanager.googleapis.com/v1/" + name + "/versions/latest:access",
    headers={"Authorization": "Bearer " + token},
)
with urllib.request.urlopen(access, timeout=30) as answer:
    value = base64.b64decode(json.load(answer)["payload"]["data"]).decode("utf-8").strip()
if not value or "\n" in value or "\0" in value:
    sys.exit("secret " + name + " is empty or spans several lines")
sys.stdout.write(value)
PY
}

copy_weights() {
  local dir
  install -d -m 0755 "$HOST_MODEL_DIR" || return 1
  for dir in "${MODEL_DIRS[@]}"; do
    log "syncing gs://$MODEL_BUCKET/$dir to $HOST_MODEL_DIR/$dir"
    install -d -m 0755 "$HOST_MODEL_DIR/$dir" || return 1
    gcloud storage rsync --recursive "gs://$MODEL_BUCKET/$dir" "$HOST_MODEL_DIR/$dir" || return 1
  done
}

# The env file docker reads the secrets from: root-only, on tmpfs, removed once the container exists.
write_env_file() {
  local tmp key token=""
  install -d -m 0700 "$STATE_DIR" || return 1
  key=$(fetch_secret "$API_KEY_SECRET") || return 1
  if [[ -n "$HF_TOKEN_SECRET" ]]; then
    token=$(fetch_secret "$HF_TOKEN_SECRET") || return 1
  fi
  tmp=$(mktemp "$STATE_DIR/env.XXXXXX") || return 1
  {
    printf 'VLLM_API_KEY=%s\n' "$key"
    if [[ -n "$token" ]]; then
      printf 'HF_TOKEN=%s\n' "$token"
    fi
  } > "$tmp" || return 1
  mv -f "$tmp" "$ENV_FILE"
}

# A metadata-server access token for the VM's service account, on stdout only.
access_token() {
  python3 - <<'PY'
import json
import urllib.request

request = urllib.request.Request(
    "http://metadata.google.internal/computeMetadata/v1/instance/service-accounts/default/token",
    headers={"Metadata-Flavor": "Google"},
)
with urllib.request.urlopen(request, timeout=10) as answer:
    print(json.load(answer)["access_token"])
PY
}

# Let docker pull from the stack's Artifact Registry repository as the VM's service account (which holds
# artifactregistry.reader on that repository only). Nothing to do for other registries.
registry_login() {
  if [[ -z "$REGISTRY_HOST" ]]; then
    return 0
  fi
  if command -v docker-credential-gcloud > /dev/null; then
    # Writes a credHelpers entry to /root/.docker/config.json; the helper fetches a token at each pull.
    gcloud auth configure-docker "$REGISTRY_HOST" --quiet || return 1
  else
    log "docker-credential-gcloud is not on PATH; logging docker in to $REGISTRY_HOST with a short-lived token"
    access_token | docker login --username oauth2accesstoken --password-stdin "https://$REGISTRY_HOST" > /dev/null \
      || return 1
  fi
}

start_container() {
  registry_login || return 1
  docker pull "$IMAGE" || return 1
  docker rm --force "$CONTAINER" > /dev/null 2>&1 || true
  docker "${DOCKER_RUN_ARGS[@]}" > /dev/null || return 1
}

# The metrics collector beside vLLM, replaced at each boot and restarted by Docker like vLLM.
start_collector() {
  install -d -m 0755 "$(dirname "$COLLECTOR_CONFIG_FILE")" || return 1
  printf '%s\n' "$COLLECTOR_CONFIG" > "$COLLECTOR_CONFIG_FILE" || return 1
  docker pull "$COLLECTOR_IMAGE" || return 1
  docker rm --force "$COLLECTOR_CONTAINER" > /dev/null 2>&1 || true
  # Host network: it scrapes vLLM on 127.0.0.1; the image reads /etc/otelcol-google/config.yaml.
  docker run --detach --name "$COLLECTOR_CONTAINER" --restart unless-stopped --net host \
    --volume "$COLLECTOR_CONFIG_FILE:/etc/otelcol-google/config.yaml:ro" --log-driver gcplogs \
    "$COLLECTOR_IMAGE" --config=/etc/otelcol-google/config.yaml > /dev/null || return 1
}

wait_until_ready() {
  local waited=0
  until curl --silent --fail --max-time 5 "http://127.0.0.1:$PORT/health" > /dev/null; do
    if (( waited >= READY_TIMEOUT_SECONDS )); then
      log "vLLM is not ready after ${waited}s; see 'docker logs $CONTAINER' or Cloud Logging"
      return 0
    fi
    sleep 15
    waited=$(( waited + 15 ))
  done
  log "vLLM is ready on port $PORT after ${waited}s"
}

main() {
  # Startup scripts may run without HOME; docker and gcloud keep their config under it.
  export HOME="${HOME:-/root}"
  MODEL_BUCKET=$(retry 5 metadata_attribute "$BUCKET_METADATA_KEY") || MODEL_BUCKET=""
  if [[ ! "$MODEL_BUCKET" =~ ^[a-z0-9][a-z0-9._-]+$ ]]; then
    log "instance metadata $BUCKET_METADATA_KEY does not name the model bucket"
    exit 1
  fi
  log "starting: image $IMAGE, port $PORT, weights from gs://$MODEL_BUCKET"
  if ! retry 5 copy_weights; then
    log "could not copy the weights from gs://$MODEL_BUCKET (does the service account have objectViewer?)"
    exit 1
  fi
  if ! retry 5 write_env_file; then
    log "could not read secret $API_KEY_SECRET (does the service account have secretAccessor on it?)"
    exit 1
  fi
  if ! retry 5 start_container; then
    rm -f "$ENV_FILE"
    log "could not start $IMAGE (can the VM reach $IMAGE's registry? internal-only nodes need Cloud NAT;"
    log "  pulling through the mirror needs artifactregistry.reader on it for the node's account)"
    exit 1
  fi
  rm -f "$ENV_FILE"
  log "container $CONTAINER started; Docker restarts it if it exits"
  if [[ -n "$COLLECTOR_IMAGE" ]]; then
    if retry 3 start_collector; then
      log "metrics collector started ($COLLECTOR_IMAGE); Docker restarts it if it exits"
    else
      log "could not start the metrics collector $COLLECTOR_IMAGE: vLLM serves, but no metrics reach Cloud Monitoring"
    fi
  fi
  wait_until_ready
}

main "$@"
"""
