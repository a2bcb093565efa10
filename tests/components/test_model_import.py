"""ModelImport on its own: who may write where, who may read the token, and how the job runs.

Guards against: an import identity that can write the whole bucket (or read weights of other models),
a token in the job's plain env or args, a job that never runs on `pulumi up`, and branch revisions.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from typing import Any

import pulumi
import pytest

from components.managed_secret import ManagedSecret, ManagedSecretArgs
from components.model_import import WRITER_ROLE, ImportJobSpec, ModelImport, ModelImportArgs
from job_scripts import script_source
from preview.capture import Capture
from preview.render import SECRET_MASK, clean

REV = "1d2c2d7f2466070e69d6fb3fd5ce9a7d75f2f6ee"
TOKEN = "hf_ComponentTestTokenNeverPrintedXyZ123"
SA = "gemma-l4-imp-target@test-project.iam.gserviceaccount.com"
JOB = "gcp:cloudrunv2/job:Job"
JOB_SPEC = ImportJobSpec(workers=8, chunk_mib=64, cpu=4, memory_gib=8, timeout_minutes=120, max_retries=3)


def import_args(**changes: Any) -> ModelImportArgs:
    values: dict[str, Any] = {
        "project": "test-project",
        "region": "us-east4",
        "bucket_name": "weights-bucket",
        "prefix": "gemma-4-12B-it-qat-w4a16-ct",
        "source_uri": "hf://google/gemma-4-12B-it-qat-w4a16-ct",
        "revision": REV,
        "image": "us-east4-docker.pkg.dev/test-project/gemma-l4-dockerhub/vllm/vllm-openai:v0.32.0",
        "account_id": "gemma-l4-imp-target",
        "job": JOB_SPEC,
        "display_name": "gemma-serving l4 weight import: target",
    }
    values.update(changes)
    return ModelImportArgs(**values)


def with_token(**changes: Any) -> Callable[[], object]:
    def body() -> None:
        secret = ManagedSecret(
            "gemma-l4-hf-token",
            ManagedSecretArgs(secret_id="gemma-l4-hf-token", value=pulumi.Output.secret(TOKEN), location="us-east4"),
        )
        ModelImport("gemma-l4-import-target", import_args(hf_token=secret, **changes))

    return body


def container(capture: Capture) -> dict[str, Any]:
    (job,) = capture.of_type(JOB)
    containers: list[dict[str, Any]] = clean(job.inputs)["template"]["template"]["containers"]
    assert len(containers) == 1
    return containers[0]


def test_writes_its_own_folder_only(register: Callable[[Callable[[], object]], Capture]) -> None:
    """objectUser on a managed folder for the prefix: not the bucket, not objectAdmin, no project role."""
    capture = register(with_token())
    (folder,) = capture.of_type("gcp:storage/managedFolder:ManagedFolder")
    assert folder.inputs["name"] == "gemma-4-12B-it-qat-w4a16-ct/"
    assert folder.inputs["bucket"] == "weights-bucket"
    (grant,) = capture.of_type("gcp:storage/managedFolderIamMember:ManagedFolderIamMember")
    assert grant.inputs["role"] == WRITER_ROLE == "roles/storage.objectUser"
    assert grant.inputs["managedFolder"] == "gemma-4-12B-it-qat-w4a16-ct/"
    assert grant.inputs["member"] == f"serviceAccount:{SA}"
    assert not capture.of_type("gcp:storage/bucketIAMMember:BucketIAMMember")
    assert not capture.of_type("gcp:projects/iAMMember:IAMMember")


def test_only_the_import_identity_reads_the_token(register: Callable[[Callable[[], object]], Capture]) -> None:
    """The Hugging Face token is readable by the import job's own account only, on that one secret."""
    capture = register(with_token())
    (reader,) = capture.of_type("gcp:secretmanager/secretIamMember:SecretIamMember")
    assert reader.inputs["role"] == "roles/secretmanager.secretAccessor"
    assert reader.inputs["member"] == f"serviceAccount:{SA}"
    assert reader.inputs["secretId"] == "gemma-l4-hf-token"


def test_token_reaches_the_job_by_reference_only(register: Callable[[Callable[[], object]], Capture]) -> None:
    """HF_TOKEN is a Secret Manager reference; the token text is nowhere in the job, and the version the
    secret holds is a Pulumi secret (masked in every plan)."""
    capture = register(with_token())
    envs = {env["name"]: env for env in container(capture)["envs"]}
    ref = envs["HF_TOKEN"]["valueSource"]["secretKeyRef"]
    assert ref["secret"] == "gemma-l4-hf-token"
    assert "value" not in envs["HF_TOKEN"]
    (version,) = capture.of_type("gcp:secretmanager/secretVersion:SecretVersion")
    assert clean(version.inputs)["secretData"] == SECRET_MASK
    everything = json.dumps([clean(r.inputs) for r in capture.resources])
    assert TOKEN not in everything


def test_gcs_source_gets_no_token(register: Callable[[Callable[[], object]], Capture]) -> None:
    """A public GCS source needs no Hub token, so its identity is not given one."""
    capture = register(with_token(source_uri="gs://vertex-model-garden-public/gemma4/12b", revision=""))
    assert not capture.of_type("gcp:secretmanager/secretIamMember:SecretIamMember")
    names = {env["name"] for env in container(capture)["envs"]}
    assert "HF_TOKEN" not in names
    assert {"IMPORT_SOURCE", "IMPORT_BUCKET", "IMPORT_PREFIX"} <= names


def test_job_runs_the_script_with_its_configuration(register: Callable[[Callable[[], object]], Capture]) -> None:
    """A job with another script, source, revision, bucket or prefix would copy the wrong weights, or none."""
    capture = register(with_token())
    spec = container(capture)
    assert spec["commands"] == ["python3"]
    assert spec["args"] == ["-c", script_source()]
    env = {e["name"]: e.get("value") for e in spec["envs"]}
    assert env["IMPORT_SOURCE"] == "hf://google/gemma-4-12B-it-qat-w4a16-ct"
    assert env["IMPORT_REVISION"] == REV
    assert env["IMPORT_BUCKET"] == "weights-bucket"
    assert env["IMPORT_PREFIX"] == "gemma-4-12B-it-qat-w4a16-ct"
    (job,) = capture.of_type(JOB)
    template = clean(job.inputs)["template"]["template"]
    assert template["serviceAccount"] == SA
    assert template["maxRetries"] == 3
    assert clean(job.inputs)["name"] == "gemma-l4-import-target"


def test_runs_on_up_and_again_only_when_the_source_changes(register: Callable[[Callable[[], object]], Capture]) -> None:
    """`pulumi up` runs the import with the exported command, again only when what the prefix must hold changes."""
    capture = register(with_token())
    (run,) = capture.of_type("command:local:Command")
    assert run.inputs["create"] == (
        "gcloud run jobs execute gemma-l4-import-target --region us-east4 --project test-project --wait"
    )
    assert run.inputs["triggers"] == [
        "weights-bucket",
        "gemma-4-12B-it-qat-w4a16-ct",
        "hf://google/gemma-4-12B-it-qat-w4a16-ct",
        REV,
        "[]",
    ]


def test_run_on_up_can_be_left_to_hand(register: Callable[[Callable[[], object]], Capture]) -> None:
    """With runOnUp false the job still exists (to run by hand) but `pulumi up` does not execute it."""
    capture = register(with_token(job=dataclasses.replace(JOB_SPEC, run_on_up=False)))
    assert not capture.of_type("command:local:Command")
    assert len(capture.of_type(JOB)) == 1


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"revision": "main"}, "a 40-hex commit id, never a branch"),
        ({"prefix": "../other-model"}, "a relative path inside the bucket"),
        ({"source_uri": "https://example.com/model"}, "hf://owner/name or gs://bucket/path"),
        ({"account_id": "Bad_Account"}, "account_id 'Bad_Account'"),
        ({"display_name": ""}, r"ModelImportArgs\.display_name is required"),
    ],
)
def test_args_refuse(changes: dict[str, str], message: str) -> None:
    """A branch revision, a prefix leaving its path, an unknown source, a bad account id or an account the console
    would show unnamed fails at construction."""
    with pytest.raises(ValueError, match=message):
        import_args(**changes)
