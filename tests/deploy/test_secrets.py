"""The Hugging Face token from `pulumi config set --secret` to Secret Manager, and nowhere else.

Guards against: the token in the rendered plan (JSON or text), in the settings, in an env value or an
output; readers beyond the import jobs (the serving identity loads from the bucket and never needs it);
a gated repo deployed without a token (a job failing with 401 after a 10-minute rollout); and a token
stored without `--secret` (plain text in Pulumi.<stack>.yaml).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from deploy.weights import SecretConfigError
from preview.capture import Capture, CapturedResource, run_program
from preview.render import SECRET_MASK, clean, plan_document, text_plan
from preview.sections import standard_sections
from stacks.loading import settings_from_config
from tests.conftest import ROOT, stack_config
from tests.stacks.test_settings import long_form

TOKEN = "hf_DistinctiveFakeTokenForLeakTests0123456789"
TOKEN_KEY = "gemma-serving:hfToken"
SECRET_READER = "gcp:secretmanager/secretIamMember:SecretIamMember"
# The metrics sidecar's RunMonitoring config (components/monitoring/collection.py): a secret only because
# Cloud Run mounts files from Secret Manager; it holds a port and an interval, and the serving identity reads it.
SIDECAR_CONFIG = "-metrics-config"


def token_secrets(capture: Capture, type_: str) -> list[CapturedResource]:
    """Resources of one type that belong to the token, not to the metrics sidecar's config."""
    return [r for r in capture.of_type(type_) if SIDECAR_CONFIG not in r.name]


def render(stack: str, *, token: str | None = TOKEN, secret: bool = True, gated: bool = False) -> Capture:
    config = stack_config(stack)
    values = dict(config.values)
    if gated:
        values = long_form(values)
        model = json.loads(values["gemma-serving:model"])
        model["source"]["huggingFace"]["gated"] = True
        values["gemma-serving:model"] = json.dumps(model)
    secret_keys = list(config.secret_keys)
    if token is not None:
        values[TOKEN_KEY] = token
        if secret:
            secret_keys.append(TOKEN_KEY)
    return run_program(
        Path(ROOT / "__main__.py"), project=config.project, stack=stack, config=values, secret_keys=secret_keys
    )


@pytest.fixture(scope="module", params=["l4", "rtx6000"])
def with_token(request: pytest.FixtureRequest) -> tuple[str, Capture]:
    stack: str = request.param
    return stack, render(stack)


def test_token_appears_nowhere_in_the_plan(with_token: tuple[str, Capture]) -> None:
    """Search the whole JSON plan, the text plan, the outputs and the program's log for the token."""
    stack, capture = with_token
    document = json.dumps(plan_document(capture, stack=stack, project="gemma-serving", notes=[]))
    text = text_plan(capture, stack=stack, project="gemma-serving", notes=[], sections=standard_sections())
    assert TOKEN not in document
    assert TOKEN not in text
    assert TOKEN not in json.dumps(clean(capture.outputs))
    assert all(TOKEN not in message for _, message in capture.logs)
    assert "gemma-" + stack + "-hf-token" in text  # the secret itself is shown...
    assert SECRET_MASK in text  # ...with its value masked


def test_secret_version_holds_the_token_as_a_pulumi_secret(with_token: tuple[str, Capture]) -> None:
    """The token is masked in the plan (a Pulumi secret), and its data stays in the stack's region."""
    _, capture = with_token
    (version,) = token_secrets(capture, "gcp:secretmanager/secretVersion:SecretVersion")
    assert clean(version.inputs)["secretData"] == SECRET_MASK
    (secret,) = token_secrets(capture, "gcp:secretmanager/secret:Secret")
    replicas = clean(secret.inputs)["replication"]["userManaged"]["replicas"]
    assert [r["location"] for r in replicas] == [clean(capture.outputs)["region"]]


def test_only_the_import_identities_read_the_token(with_token: tuple[str, Capture]) -> None:
    """One accessor binding per import job (l4: the model; rtx6000: model and drafter), none for the
    serving identity, and none at project level."""
    stack, capture = with_token
    readers = sorted(clean(r.inputs)["member"] for r in token_secrets(capture, SECRET_READER))
    imports = ["target"] if stack == "l4" else ["drafter", "target"]
    assert readers == [
        f"serviceAccount:gemma-{stack}-imp-{key}@offline-placeholder-project.iam.gserviceaccount.com" for key in imports
    ]
    assert {clean(r.inputs)["role"] for r in capture.of_type(SECRET_READER)} == {"roles/secretmanager.secretAccessor"}
    serving = clean(capture.outputs)["serviceAccount"]
    assert all(not member.endswith(serving) for member in readers)
    # The only project-level grant is the serving identity's metric writer (the sidecar writes with it).
    project_roles = {clean(r.inputs)["role"] for r in capture.of_type("gcp:projects/iAMMember:IAMMember")}
    assert project_roles == {"roles/monitoring.metricWriter"}


def test_import_jobs_are_the_only_writers_each_in_its_own_folder(with_token: tuple[str, Capture]) -> None:
    """Who can write the bucket: each import job, on its own prefix; the serving identity only reads."""
    stack, capture = with_token
    writers = {
        clean(r.inputs)["managedFolder"]: clean(r.inputs)["member"]
        for r in capture.of_type("gcp:storage/managedFolderIamMember:ManagedFolderIamMember")
    }
    expected = {"gemma-4-12B-it-qat-w4a16-ct/": "target"}
    if stack == "rtx6000":
        expected["gemma-4-12B-it-assistant/"] = "drafter"
    assert {folder: member.split("@")[0] for folder, member in writers.items()} == {
        folder: f"serviceAccount:gemma-{stack}-imp-{key}" for folder, key in expected.items()
    }
    bucket_roles = {clean(r.inputs)["role"] for r in capture.of_type("gcp:storage/bucketIAMMember:BucketIAMMember")}
    assert bucket_roles == {"roles/storage.objectViewer"}


def test_no_token_no_secret() -> None:
    """Gemma 4 repos are not gated: without a token the stack deploys and creates no secret."""
    capture = render("l4", token=None)
    assert not token_secrets(capture, "gcp:secretmanager/secret:Secret")
    assert not token_secrets(capture, SECRET_READER)
    assert len(capture.of_type("gcp:cloudrunv2/job:Job")) == 1


def test_gated_repo_without_token_names_the_key_and_the_command() -> None:
    """A gated repo without a token fails before deploying, with the key and the command, not a 401 in the job."""
    with pytest.raises(SecretConfigError) as caught:
        render("l4", token=None, gated=True)
    message = str(caught.value)
    assert "gemma-serving:hfToken is not set" in message
    assert "pulumi config set --secret gemma-serving:hfToken" in message
    assert "google/gemma-4-12B-it-qat-w4a16-ct" in message


def test_token_stored_in_plain_text_is_refused() -> None:
    """`pulumi config set` without --secret writes the token in plain text to the stack file."""
    with pytest.raises(SecretConfigError, match="stored in plain text") as caught:
        render("l4", secret=False)
    assert TOKEN not in str(caught.value)


def test_settings_never_hold_the_token() -> None:
    """The frozen settings are printed and compared; the token must not be parsed into them."""
    config = stack_config("l4")
    settings = settings_from_config({**config.values, TOKEN_KEY: TOKEN}, project=config.project)
    assert TOKEN not in repr(settings)
    assert TOKEN not in settings.model_dump_json()
