"""Adapter versions in a stack: each imports into a folder of its own, one identity writes them all, names
and counts stay within stated bounds, and every replica is told where the route table is."""

from __future__ import annotations

import json
from typing import Any

import pytest

from serving.adapter_routes_runtime import ROUTES_ENV, SERVED_NAMES_ENV
from serving.adapter_versions import default_version
from serving.lora import ROUTES_MIDDLEWARE
from serving.vllm_args import check_serve_args
from stacks.adapters import MAX_ADAPTERS, MAX_PROBES
from stacks.loading import StackConfigError, load_stack
from tests.conftest import ROOT, render_stack, stack_config

EXAMPLE = "gemma4-12b-adapters-l4"
ADAPTERS_KEY = "gemma-serving:adapters"
JOB = "gcp:cloudrunv2/job:Job"
ACCOUNT = "gcp:serviceaccount/account:Account"
FOLDER_GRANT = "gcp:storage/managedFolderIamMember:ManagedFolderIamMember"
SERVICE = "gcp:cloudrunv2/service:Service"


def _adapter(name: str, **changes: Any) -> dict[str, Any]:
    adapter: dict[str, Any] = {
        "name": name,
        "source": {"gcs": f"gs://acme-gemma-adapters/{name}/v1"},
        "base": "google/gemma-4-12B-it",
        "rank": 16,
    }
    adapter.update(changes)
    return adapter


def _refused(adapters: list[dict[str, Any]]) -> str:
    config = dict(stack_config(EXAMPLE).values)
    config[ADAPTERS_KEY] = json.dumps(adapters)
    with pytest.raises(StackConfigError) as raised:
        load_stack(config, root=ROOT)
    return str(raised.value)


def _job_env(capture: Any, adapter: str) -> dict[str, str]:
    job = next(r for r in capture.of_type(JOB) if r.name.endswith(f"-a-{adapter}-job"))
    container = job.inputs["template"]["template"]["containers"][0]
    return {env["name"]: env.get("value") for env in container["envs"]}


def test_each_version_imports_into_its_own_folder_and_names_its_version() -> None:
    """A swap must import beside the served version, never into it: the folder is adapters/NAME@VERSION, the
    declared version or one derived from the source."""
    declared = [_adapter("support-bot", version="v4"), _adapter("sql-writer")]
    capture = render_stack(EXAMPLE, {ADAPTERS_KEY: json.dumps(declared)})
    env = _job_env(capture, "support-bot")
    assert env["IMPORT_PREFIX"] == "adapters/support-bot@v4"
    assert json.loads(env["IMPORT_ADAPTER"])["version"] == "v4"
    derived = default_version("gs://acme-gemma-adapters/sql-writer/v1", "")
    assert _job_env(capture, "sql-writer")["IMPORT_PREFIX"] == f"adapters/sql-writer@{derived}"


def test_the_import_job_carries_the_models_shapes_for_its_tensor_check() -> None:
    """The job refuses a wrong-shaped adapter only if it knows the model's modules per layer (the 12B's 48)."""
    expected = json.loads(_job_env(render_stack(EXAMPLE), "support-bot")["IMPORT_ADAPTER"])
    assert len(expected["layerKinds"]) == 48
    assert expected["kindShapes"]["full_attention"]["q_proj"] == [3840, 8192]


def test_a_new_version_changes_no_serving_revision() -> None:
    """Swapping a version is a bucket change and one table write: no revision, no cold start for anyone."""
    one = render_stack(EXAMPLE, {ADAPTERS_KEY: json.dumps([_adapter("support-bot", version="v3")])})
    two = render_stack(EXAMPLE, {ADAPTERS_KEY: json.dumps([_adapter("support-bot", version="v4")])})
    templates = [
        json.dumps(c.one(SERVICE).inputs["template"], sort_keys=True, default=lambda _u: "<computed>")
        for c in (one, two)
    ]
    assert templates[0] == templates[1]


def test_one_identity_writes_every_adapter_however_many() -> None:
    """150 adapters were 150 service accounts, above a project's default quota of 100: one writes them all."""
    few = render_stack(EXAMPLE, {ADAPTERS_KEY: json.dumps([_adapter("bot-a")])})
    many = render_stack(EXAMPLE, {ADAPTERS_KEY: json.dumps([_adapter(f"bot-{i}") for i in range(20)])})
    assert len(few.of_type(ACCOUNT)) == len(many.of_type(ACCOUNT))
    writers = [r for r in many.of_type(FOLDER_GRANT) if r.name.endswith("-import-adapters-writer")]
    assert len(writers) == 1
    assert writers[0].inputs["role"] == "roles/storage.objectUser"
    assert len(many.of_type(JOB)) == 20 + len(few.of_type(JOB)) - 1


def test_every_replica_reads_the_route_table_and_runs_its_middleware() -> None:
    """A replica without the table's address could only serve the public names as they were at its start."""
    capture = render_stack(EXAMPLE)
    container = capture.one(SERVICE).inputs["template"]["containers"][0]
    env = {item["name"]: item.get("value") for item in container["envs"]}
    assert ROUTES_ENV in env  # gs://<the bucket>/adapter-routes.json: the bucket's name is known only at `up`
    assert json.loads(str(env[SERVED_NAMES_ENV])) == [
        load_stack(stack_config(EXAMPLE).values, root=ROOT).settings.model.served_name
    ]
    args = container["args"]
    assert ROUTES_MIDDLEWARE in args
    assert check_serve_args(args) == []
    assert "adapterRoutes" in capture.outputs


def test_an_adapter_named_like_the_served_model_or_a_catalog_model_is_refused() -> None:
    """Under the served name it is never reached (the base wins); under another model's id it passes for it."""
    served = load_stack(stack_config(EXAMPLE).values, root=ROOT).settings.model.served_name
    assert "model.servedName" in _refused([_adapter(served)])
    assert "catalog model's id" in _refused([_adapter("gemma-4-31b-it")])


def test_adapter_count_and_probes_are_bounded() -> None:
    """150 adapters (150 jobs, slots thrashing) and 2,000 probes (4,000 requests per check) are refused."""
    assert f"at most {MAX_ADAPTERS}" in _refused([_adapter(f"bot-{i}") for i in range(150)])
    probes = [{"prompt": f"question {i}"} for i in range(2000)]
    message = _refused([_adapter("support-bot", probes=probes)])
    assert "adapters[0].probes" in message or "adapters.0.probes" in message
    assert str(MAX_PROBES) in message


@pytest.mark.parametrize("version", ["V4", "-v4", "v4/../x", "v..4", "a" * 21, "v4@x"])
def test_version_labels_that_are_not_folder_safe_are_refused(version: str) -> None:
    """The version names a folder and part of the model clients send: no path parts, no capitals, short."""
    assert "version" in _refused([_adapter("support-bot", version=version)])
