"""mypy sees the inputs of the wired resources and their blocks: a wrong key or value fails `make lint`.

Why: the wire resources register pulumi-gcp resources by type token with `**inputs`, and before their inputs
were typed a misspelt key (`acount_id`), a missing required one (a binding without its `member`) or a port
given as a number reached the provider unchecked. The calls under `TYPE_CHECKING` below are each wrong in
one way, and each carries the `type: ignore` of the error mypy must report there: `make lint` runs mypy with
`warn_unused_ignores` (strict), so were an input untyped again (`Any`), the ignore would be unused and lint
would fail. The calls never run; the test that does run holds the other half: the typed builders return the
wire form `wire` returned, so no plan moves.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from components.wire import billing, cloud_run, cloud_run_job, compute, gcp, secretmanager, storage, wire

if TYPE_CHECKING:

    def _refused_by_mypy() -> None:
        gcp.ServiceAccount("account", acount_id="gemma-serving")  # type: ignore[call-arg]
        gcp.BucketIamMember("reader", bucket="weights", role="roles/storage.objectViewer")  # type: ignore[call-arg]
        gcp.ProjectIamMember("viewer", project="p", role="roles/monitoring.viewer", member=None)  # type: ignore[arg-type]
        gcp.Firewall("ssh", network="default", allows=[compute.firewall_allow(protocol="tcp", ports=[22])])  # type: ignore[list-item]
        gcp.Secret("token", replication=wire(auto=wire()))  # type: ignore[arg-type]
        storage.lifecycle_condition(age="30")  # type: ignore[arg-type]
        billing.threshold_rule(threshold_percent="0.5")  # type: ignore[arg-type]
        # A Cloud Run service's blocks: a misspelt key, a count as text, a volume without its bucket.
        cloud_run.traffic(type="TRAFFIC_TARGET_ALLOCATION_TYPE_LATEST", percnt=100)  # type: ignore[call-arg]
        cloud_run.scaling(min_instance_count="1")  # type: ignore[arg-type]
        cloud_run.volume(name="models", gcs=cloud_run.volume_gcs(read_only=True))  # type: ignore[call-arg]
        cloud_run.template(containers=[cloud_run.container(image="vllm")], timeout=600)  # type: ignore[arg-type]
        gcp.CloudRunService("service", location="europe-west4", template=wire(containers=[]))  # type: ignore[arg-type]
        # A Cloud Run job's: a service's template given to a job, a secret reference one level too high.
        gcp.CloudRunJob("job", location="europe-west4", template=cloud_run.template())  # type: ignore[arg-type]
        cloud_run_job.env(name="HF_TOKEN", value_source=cloud_run_job.secret_key_ref(secret="t", version="1"))  # type: ignore[arg-type]
        cloud_run_job.task_template(max_retries="0")  # type: ignore[arg-type]
        cloud_run_job.volume_mount(name="results", mount_pth="/results")  # type: ignore[call-arg]
        # The Google provider: an input the project does not set (until typed from gcp.Provider), a project as a list.
        gcp.GcpProvider("google", project="p", user_project_override=True)  # type: ignore[call-arg]
        gcp.GcpProvider("google", project=["p"])  # type: ignore[arg-type]


def test_a_typed_builder_returns_what_wire_returned() -> None:
    """The typed builders change no plan: camelCase keys, None fields left out, nested blocks as given."""
    replication = secretmanager.replication(
        user_managed=secretmanager.user_managed(replicas=[secretmanager.replica(location="europe-west4")])
    )
    assert replication == wire(user_managed=wire(replicas=[wire(location="europe-west4")]))
    assert replication == {"userManaged": {"replicas": [{"location": "europe-west4"}]}}
    rule = storage.lifecycle_rule(
        action=storage.lifecycle_action(type="Delete"),
        condition=storage.lifecycle_condition(age=7, matches_prefixes=["compile-cache/"], created_before=None),
    )
    assert rule == {"action": {"type": "Delete"}, "condition": {"age": 7, "matchesPrefixes": ["compile-cache/"]}}
