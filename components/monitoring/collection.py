"""What a Cloud Run service's metrics sidecar needs before the revision starts: its config and its grants.

Why a component: the sidecar reads its RunMonitoring config from Secret Manager (the only file source a
Cloud Run container has besides a bucket) and writes with the serving identity, so the secret, the
identity's read grant on that one secret and its `roles/monitoring.metricWriter` must all exist before
the revision that mounts them: the service waits for `ready`. The config names a port and an interval,
no credential. (A TPU node grants its own writer role and gets its config from the startup script.)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import pulumi

from components.managed_secret import ACCESSOR_ROLE
from components.monitoring.sidecar import MetricsSidecar
from components.wire import gcp, secretmanager
from serving.collectors import METRIC_WRITER_ROLE, RUN_GMP_SIDECAR_IMAGE
from serving.gcp_names import SECRET_ID
from serving.naming import TypeToken


@dataclass(frozen=True)
class SidecarCollectionArgs:
    """The project, the identity the sidecar runs as, and its config."""

    project: str
    # The IAM member of the serving identity (`serviceAccount:<email>`).
    writer: pulumi.Input[str]
    secret_id: str
    config: str
    # The secret's data stays in the stack's region.
    location: str
    image: str = RUN_GMP_SIDECAR_IMAGE
    labels: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not SECRET_ID.match(self.secret_id):
            raise ValueError(f"SidecarCollectionArgs.secret_id {self.secret_id!r}: 1-255 letters, digits, '-' or '_'")
        if not self.config.strip():
            raise ValueError("SidecarCollectionArgs.config is empty: the sidecar would scrape port 8080 only")


class SidecarCollection(pulumi.ComponentResource):
    """Owns: the config secret and its version, the identity's read grant on it and its metric-writer grant."""

    # What the service passes to VllmGpuServiceArgs.metrics_sidecar, and what it must wait for.
    sidecar: MetricsSidecar
    ready: list[pulumi.Resource]

    def __init__(self, name: str, args: SidecarCollectionArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(TypeToken.SIDECAR_COLLECTION, name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        secret = gcp.Secret(
            f"{name}-config",
            project=args.project,
            secret_id=args.secret_id,
            replication=secretmanager.replication(
                user_managed=secretmanager.user_managed(replicas=[secretmanager.replica(location=args.location)])
            ),
            labels=dict(args.labels),
            opts=pulumi.ResourceOptions(parent=self, delete_before_replace=True),
        )
        version = gcp.SecretVersion(f"{name}-config-version", secret=secret.id, secret_data=args.config, opts=child)
        reader = gcp.SecretIamMember(
            f"{name}-config-reader",
            project=args.project,
            secret_id=secret.secret_id,
            role=ACCESSOR_ROLE,
            member=args.writer,
            opts=child,
        )
        writer = gcp.ProjectIamMember(
            f"{name}-metric-writer", project=args.project, role=METRIC_WRITER_ROLE, member=args.writer, opts=child
        )
        self.sidecar = MetricsSidecar(config_secret=args.secret_id, image=args.image)
        self.ready = [version, reader, writer]
        self.register_outputs({"configSecret": secret.id})
