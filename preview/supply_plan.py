"""The plan's "before vLLM starts" section: APIs, image repositories, which image each container pulls,
the secrets (masked) and who may read them, and each weight import with its source, identity and run.

Why: these are the parts a reviewer cannot see in the service's own block, and each was a hand step
before (enabling APIs, copying weights from a laptop, pasting a token somewhere).
"""

from __future__ import annotations

from typing import Any

from preview.capture import Capture, CapturedResource
from preview.render import clean
from preview.tpu_plan import pulled_image, startup_scripts
from serving.naming import TypeToken

API = "gcp:projects/service:Service"
REPOSITORY = "gcp:artifactregistry/repository:Repository"
REPOSITORY_READER = "gcp:artifactregistry/repositoryIamMember:RepositoryIamMember"
DOCKER_IMAGE = "docker:index/image:Image"
# Type tokens, not credentials.
SECRET = "gcp:secretmanager/secret:Secret"  # noqa: S105 - a Pulumi type token, not a credential
SECRET_VERSION = "gcp:secretmanager/secretVersion:SecretVersion"  # noqa: S105 - a Pulumi type token, not a credential
SECRET_READER = "gcp:secretmanager/secretIamMember:SecretIamMember"  # noqa: S105 - a Pulumi type token, not a credential
IMPORT = TypeToken.MODEL_IMPORT
JOB = "gcp:cloudrunv2/job:Job"
SERVICE = "gcp:cloudrunv2/service:Service"
RUN = "command:local:Command"
FOLDER_WRITER = "gcp:storage/managedFolderIamMember:ManagedFolderIamMember"


def _inputs(resource: CapturedResource) -> dict[str, Any]:
    return dict(clean(resource.inputs))


def _children(capture: Capture, parent: CapturedResource, type_token: str) -> list[CapturedResource]:
    return [r for r in capture.of_type(type_token) if r.parent == parent.urn]


def _env(container: dict[str, Any]) -> dict[str, Any]:
    return {env.get("name"): env.get("value", env.get("valueSource")) for env in container.get("envs") or []}


def _row(label: str, value: object) -> str:
    return f"  {label + ':' if label else '':<17} {value}"


def _images(capture: Capture) -> list[str]:
    lines = [
        f"service {service.name} <- {container.get('image')}"
        for service in capture.of_type(SERVICE)
        for container in _inputs(service).get("template", {}).get("containers") or []
    ]
    lines += [
        f"job {job.name} <- {container.get('image')}"
        for job in capture.of_type(JOB)
        for container in _inputs(job).get("template", {}).get("template", {}).get("containers") or []
    ]
    lines += [f"tpu node {node_id} <- {pulled_image(script)}" for node_id, script in startup_scripts(capture)]
    for image in capture.of_type(DOCKER_IMAGE):
        inputs = _inputs(image)
        build = inputs.get("build", {})
        base = build.get("args", {}).get("BASE_IMAGE")
        lines.append(
            f"built {inputs.get('imageName')} from {build.get('context')}/ (FROM {base}; build on preview: "
            f"{str(inputs.get('buildOnPreview', False)).lower()}; services run it by digest)"
        )
    return lines


def _repositories(capture: Capture) -> list[str]:
    lines: list[str] = []
    for repo in capture.of_type(REPOSITORY):
        inputs = _inputs(repo)
        upstream = inputs.get("remoteRepositoryConfig", {}).get("dockerRepository", {}).get("publicRepository")
        immutable = inputs.get("dockerConfig", {}).get("immutableTags", False)
        kind = f"mirror of {upstream}" if upstream else f"standard ({'immutable' if immutable else 'mutable'} tags)"
        readers = [
            _inputs(r).get("member")
            for r in capture.of_type(REPOSITORY_READER)
            if r.parent == repo.parent and _inputs(r).get("location") == inputs.get("location")
        ]
        lines.append(
            f"{inputs.get('repositoryId')} in {inputs.get('location')}: {kind}; "
            f"readers: {', '.join(map(str, readers)) or 'none granted (Cloud Run pulls with its service agent)'}"
        )
    return lines


def _secrets(capture: Capture) -> list[str]:
    lines: list[str] = []
    for secret in capture.of_type(SECRET):
        inputs = _inputs(secret)
        values = [_inputs(v).get("secretData") for v in capture.of_type(SECRET_VERSION) if v.parent == secret.parent]
        readers = [
            f"{_inputs(r).get('member')} ({_inputs(r).get('role')})"
            for r in capture.of_type(SECRET_READER)
            if _inputs(r).get("secretId") == inputs.get("secretId")
        ]
        lines.append(
            f"{inputs.get('secretId')}: value {', '.join(map(str, values)) or 'none'}; "
            f"readable by {', '.join(readers) or 'nobody yet'}"
        )
    return lines


def _import_block(capture: Capture, component: CapturedResource) -> list[str]:
    jobs = _children(capture, component, JOB)
    if not jobs:
        return []
    job = _inputs(jobs[0])
    template = job.get("template", {}).get("template", {})
    container = (template.get("containers") or [{}])[0]
    env = _env(container)
    limits = container.get("resources", {}).get("limits", {})
    writers = [
        f"{_inputs(r).get('role')} on folder {_inputs(r).get('managedFolder')}"
        for r in _children(capture, component, FOLDER_WRITER)
    ]
    token_readers = [
        f"{_inputs(r).get('role')} on secret {_inputs(r).get('secretId')}"
        for r in _children(capture, component, SECRET_READER)
    ]
    token = env.get("HF_TOKEN")
    runs = _children(capture, component, RUN)
    run_line = (
        f"on `pulumi up`: {_inputs(runs[0]).get('create')} (again when bucket, prefix, source, revision or "
        "exclude change)"
        if runs
        else "by hand only (modelImport.runOnUp is false)"
    )
    revision = env.get("IMPORT_REVISION") or "(none: the job fingerprints the source listing)"
    script = next((arg for arg in container.get("args") or [] if isinstance(arg, str) and "\n" in arg), "")
    return [
        f"Weight import {component.name}:",
        _row("source", f"{env.get('IMPORT_SOURCE')} @ {revision}"),
        _row("into", f"gs://{env.get('IMPORT_BUCKET')}/{env.get('IMPORT_PREFIX')}/ (+ .gemma-import-complete.json)"),
        _row("exclude", env.get("IMPORT_EXCLUDE")),
        _row("identity", f"{template.get('serviceAccount')}: {'; '.join(writers + token_readers) or 'no grants'}"),
        _row("token", "HF_TOKEN from Secret Manager (never in the job spec)" if token else "none (source needs none)"),
        _row(
            "job",
            f"{job.get('name')}: {limits.get('cpu')} CPU / {limits.get('memory')}, {env.get('IMPORT_WORKERS')} files "
            f"at once, timeout {template.get('timeout')}, {template.get('maxRetries')} retries (each resumes)",
        ),
        _row("script", f"python3 -c <job_scripts/import_weights.py, {script.count(chr(10)) + 1} lines>"),
        _row("runs", run_line),
        "",
    ]


def supply_section(capture: Capture) -> list[str]:
    """Empty when the program registered none of these (e.g. a stack that brings its own weights)."""
    apis = sorted(str(_inputs(r).get("service")) for r in capture.of_type(API))
    images = _images(capture)
    if not (apis or images or capture.of_type(IMPORT)):
        return []
    lines = ["Before vLLM starts (APIs, images, secrets, weights):"]
    if apis:
        lines.append(_row("APIs enabled", f"{', '.join(apis)} (left enabled on destroy)"))
    for index, line in enumerate(_repositories(capture)):
        lines.append(_row("Repository" if index == 0 else "", line))
    for index, line in enumerate(images):
        lines.append(_row("Images pulled" if index == 0 else "", line))
    secrets = _secrets(capture)
    lines.append(_row("Secrets", secrets[0] if secrets else "none (no gemma-serving:hfToken set; no source needs one)"))
    lines += [_row("", line) for line in secrets[1:]]
    lines.append("")
    for component in sorted(capture.of_type(IMPORT), key=lambda r: r.name):
        lines += _import_block(capture, component)
    return lines
