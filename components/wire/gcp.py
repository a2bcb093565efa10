"""The Google Cloud resources the project registers, by pulumi-gcp's type tokens (see `components.wire`).

Each class states only what its generated pulumi-gcp class adds to a registration (secret outputs and
inputs, aliases) and the output-only properties the project reads; inputs are the generated class's
keyword arguments. The Google provider resource (`GcpProvider`) is registered the same way: its module is
part of `pulumi_gcp`'s own import, but the SDK reads the type hints of its ~400 input properties on every
registration of the generated class (~1.7 % of a plan's instructions).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Unpack

import pulumi
from pulumi_gcp import _utilities as gcp_sdk  # the SDK's own resource defaults: it has no public API for them

from components.wire import WireResource, wire

if TYPE_CHECKING:
    from components.wire import gcp_inputs

# The labels pulumi-gcp computes from the provider's default labels, secret in every labelled resource.
_LABELS = ("effectiveLabels", "pulumiLabels")


class GcpResource(WireResource):
    """A pulumi-gcp resource: the provider plugin pinned to the installed SDK's version."""

    DEFAULTS = staticmethod(gcp_sdk.get_resource_opts_defaults)


# Where the generated `gcp.Provider` reads project, region and zone from when they are not given, in its order.
PROVIDER_ENV_FALLBACKS = {
    "project": ("GOOGLE_PROJECT", "GOOGLE_CLOUD_PROJECT", "GCLOUD_PROJECT", "CLOUDSDK_CORE_PROJECT"),
    "region": ("GOOGLE_REGION", "GCLOUD_REGION", "CLOUDSDK_COMPUTE_REGION"),
    "zone": ("GOOGLE_ZONE", "GCLOUD_ZONE", "CLOUDSDK_COMPUTE_ZONE"),
}


class GcpProvider(pulumi.ProviderResource):
    """`gcp.Provider` with the inputs the project sets (`gcp_inputs.GcpProviderInputs`: `project`,
    `impersonate_service_account`, `region`, `zone`): the generated class's environment fallbacks for project,
    region and zone, its secret output and the SDK's provider version, as that class registers them."""

    SECRET_OUTPUTS = ("accessToken",)

    def __init__(
        self,
        resource_name: str,
        opts: pulumi.ResourceOptions | None = None,
        **inputs: Unpack[gcp_inputs.GcpProviderInputs],
    ) -> None:
        given = {name: value for name, value in inputs.items() if value is not None}
        for name, variables in PROVIDER_ENV_FALLBACKS.items():
            if name not in given:
                given[name] = next((os.environ[variable] for variable in variables if variable in os.environ), None)
        merged = pulumi.ResourceOptions.merge(gcp_sdk.get_resource_opts_defaults(), opts)
        merged = pulumi.ResourceOptions.merge(
            merged, pulumi.ResourceOptions(additional_secret_outputs=list(self.SECRET_OUTPUTS))
        )
        super().__init__("gcp", resource_name, wire(**given), merged)


class CloudRunService(GcpResource):
    """`gcp.cloudrunv2.Service`."""

    TYPE = "gcp:cloudrunv2/service:Service"
    SECRET_OUTPUTS = _LABELS
    COMPUTED = ("name", "uri", "trafficStatuses")

    if TYPE_CHECKING:

        def __init__(
            self,
            resource_name: str,
            opts: pulumi.ResourceOptions | None = None,
            **inputs: Unpack[gcp_inputs.CloudRunServiceInputs],
        ) -> None: ...

    @property
    def name(self) -> pulumi.Output[str]:
        return self.text("name")

    @property
    def uri(self) -> pulumi.Output[str]:
        return self.text("uri")

    @property
    def traffic_statuses(self) -> pulumi.Output[list[dict[str, Any]] | None]:
        """Each traffic target's status as the provider returns it (wire keys: `tag`, `uri`, `revision`...)."""
        return self.output("trafficStatuses")


class CloudRunServiceIamMember(GcpResource):
    """`gcp.cloudrunv2.ServiceIamMember`."""

    TYPE = "gcp:cloudrunv2/serviceIamMember:ServiceIamMember"

    if TYPE_CHECKING:

        def __init__(
            self,
            resource_name: str,
            opts: pulumi.ResourceOptions | None = None,
            **inputs: Unpack[gcp_inputs.CloudRunServiceIamMemberInputs],
        ) -> None: ...


class CloudRunJob(GcpResource):
    """`gcp.cloudrunv2.Job`."""

    TYPE = "gcp:cloudrunv2/job:Job"
    SECRET_OUTPUTS = _LABELS
    COMPUTED = ("name",)

    if TYPE_CHECKING:

        def __init__(
            self,
            resource_name: str,
            opts: pulumi.ResourceOptions | None = None,
            **inputs: Unpack[gcp_inputs.CloudRunJobInputs],
        ) -> None: ...

    @property
    def name(self) -> pulumi.Output[str]:
        return self.text("name")


class Bucket(GcpResource):
    """`gcp.storage.Bucket`."""

    TYPE = "gcp:storage/bucket:Bucket"
    SECRET_OUTPUTS = _LABELS
    COMPUTED = ("name",)

    if TYPE_CHECKING:

        def __init__(
            self,
            resource_name: str,
            opts: pulumi.ResourceOptions | None = None,
            **inputs: Unpack[gcp_inputs.BucketInputs],
        ) -> None: ...

    @property
    def name(self) -> pulumi.Output[str]:
        return self.text("name")


class BucketIamMember(GcpResource):
    """`gcp.storage.BucketIAMMember`."""

    TYPE = "gcp:storage/bucketIAMMember:BucketIAMMember"

    if TYPE_CHECKING:

        def __init__(
            self,
            resource_name: str,
            opts: pulumi.ResourceOptions | None = None,
            **inputs: Unpack[gcp_inputs.BucketIamMemberInputs],
        ) -> None: ...


class ManagedFolder(GcpResource):
    """`gcp.storage.ManagedFolder`."""

    TYPE = "gcp:storage/managedFolder:ManagedFolder"
    COMPUTED = ("name",)

    if TYPE_CHECKING:

        def __init__(
            self,
            resource_name: str,
            opts: pulumi.ResourceOptions | None = None,
            **inputs: Unpack[gcp_inputs.ManagedFolderInputs],
        ) -> None: ...

    @property
    def name(self) -> pulumi.Output[str]:
        return self.text("name")


class ManagedFolderIamMember(GcpResource):
    """`gcp.storage.ManagedFolderIamMember`."""

    TYPE = "gcp:storage/managedFolderIamMember:ManagedFolderIamMember"

    if TYPE_CHECKING:

        def __init__(
            self,
            resource_name: str,
            opts: pulumi.ResourceOptions | None = None,
            **inputs: Unpack[gcp_inputs.ManagedFolderIamMemberInputs],
        ) -> None: ...


class BucketObject(GcpResource):
    """`gcp.storage.BucketObject`."""

    TYPE = "gcp:storage/bucketObject:BucketObject"
    SECRET_INPUTS = ("content", "customerEncryption")
    SECRET_OUTPUTS = ("content", "customerEncryption")

    if TYPE_CHECKING:

        def __init__(
            self,
            resource_name: str,
            opts: pulumi.ResourceOptions | None = None,
            **inputs: Unpack[gcp_inputs.BucketObjectInputs],
        ) -> None: ...


class Secret(GcpResource):
    """`gcp.secretmanager.Secret`."""

    TYPE = "gcp:secretmanager/secret:Secret"
    SECRET_OUTPUTS = _LABELS
    COMPUTED = ("name",)

    if TYPE_CHECKING:

        def __init__(
            self,
            resource_name: str,
            opts: pulumi.ResourceOptions | None = None,
            **inputs: Unpack[gcp_inputs.SecretInputs],
        ) -> None: ...

    @property
    def name(self) -> pulumi.Output[str]:
        """projects/<number>/secrets/<secret id>."""
        return self.text("name")

    @property
    def secret_id(self) -> pulumi.Output[str]:
        return self.text("secretId")


class SecretVersion(GcpResource):
    """`gcp.secretmanager.SecretVersion`."""

    TYPE = "gcp:secretmanager/secretVersion:SecretVersion"
    SECRET_INPUTS = ("secretData", "secretDataWo")
    SECRET_OUTPUTS = ("secretData", "secretDataWo")
    COMPUTED = ("name", "version")

    if TYPE_CHECKING:

        def __init__(
            self,
            resource_name: str,
            opts: pulumi.ResourceOptions | None = None,
            **inputs: Unpack[gcp_inputs.SecretVersionInputs],
        ) -> None: ...

    @property
    def name(self) -> pulumi.Output[str]:
        return self.text("name")

    @property
    def version(self) -> pulumi.Output[str]:
        return self.text("version")


class SecretIamMember(GcpResource):
    """`gcp.secretmanager.SecretIamMember`."""

    TYPE = "gcp:secretmanager/secretIamMember:SecretIamMember"

    if TYPE_CHECKING:

        def __init__(
            self,
            resource_name: str,
            opts: pulumi.ResourceOptions | None = None,
            **inputs: Unpack[gcp_inputs.SecretIamMemberInputs],
        ) -> None: ...


class ProjectService(GcpResource):
    """`gcp.projects.Service`: one API enabled on the project."""

    TYPE = "gcp:projects/service:Service"

    if TYPE_CHECKING:

        def __init__(
            self,
            resource_name: str,
            opts: pulumi.ResourceOptions | None = None,
            **inputs: Unpack[gcp_inputs.ProjectServiceInputs],
        ) -> None: ...


class ProjectIamMember(GcpResource):
    """`gcp.projects.IAMMember`."""

    TYPE = "gcp:projects/iAMMember:IAMMember"

    if TYPE_CHECKING:

        def __init__(
            self,
            resource_name: str,
            opts: pulumi.ResourceOptions | None = None,
            **inputs: Unpack[gcp_inputs.ProjectIamMemberInputs],
        ) -> None: ...


class ServiceAccount(GcpResource):
    """`gcp.serviceaccount.Account`."""

    TYPE = "gcp:serviceaccount/account:Account"
    ALIASES = ("gcp:serviceAccount/account:Account",)
    COMPUTED = ("email", "member", "name")

    if TYPE_CHECKING:

        def __init__(
            self,
            resource_name: str,
            opts: pulumi.ResourceOptions | None = None,
            **inputs: Unpack[gcp_inputs.ServiceAccountInputs],
        ) -> None: ...

    @property
    def email(self) -> pulumi.Output[str]:
        return self.text("email")

    @property
    def name(self) -> pulumi.Output[str]:
        """projects/<project>/serviceAccounts/<email>."""
        return self.text("name")


class ServiceAccountIamMember(GcpResource):
    """`gcp.serviceaccount.IAMMember`."""

    TYPE = "gcp:serviceaccount/iAMMember:IAMMember"
    ALIASES = ("gcp:serviceAccount/iAMMember:IAMMember",)

    if TYPE_CHECKING:

        def __init__(
            self,
            resource_name: str,
            opts: pulumi.ResourceOptions | None = None,
            **inputs: Unpack[gcp_inputs.ServiceAccountIamMemberInputs],
        ) -> None: ...


class Repository(GcpResource):
    """`gcp.artifactregistry.Repository`."""

    TYPE = "gcp:artifactregistry/repository:Repository"
    SECRET_OUTPUTS = _LABELS

    if TYPE_CHECKING:

        def __init__(
            self,
            resource_name: str,
            opts: pulumi.ResourceOptions | None = None,
            **inputs: Unpack[gcp_inputs.RepositoryInputs],
        ) -> None: ...

    @property
    def repository_id(self) -> pulumi.Output[str]:
        return self.text("repositoryId")


class RepositoryIamMember(GcpResource):
    """`gcp.artifactregistry.RepositoryIamMember`."""

    TYPE = "gcp:artifactregistry/repositoryIamMember:RepositoryIamMember"

    if TYPE_CHECKING:

        def __init__(
            self,
            resource_name: str,
            opts: pulumi.ResourceOptions | None = None,
            **inputs: Unpack[gcp_inputs.RepositoryIamMemberInputs],
        ) -> None: ...


class Dashboard(GcpResource):
    """`gcp.monitoring.Dashboard`."""

    TYPE = "gcp:monitoring/dashboard:Dashboard"

    if TYPE_CHECKING:

        def __init__(
            self,
            resource_name: str,
            opts: pulumi.ResourceOptions | None = None,
            **inputs: Unpack[gcp_inputs.DashboardInputs],
        ) -> None: ...


class AlertPolicy(GcpResource):
    """`gcp.monitoring.AlertPolicy`."""

    TYPE = "gcp:monitoring/alertPolicy:AlertPolicy"

    if TYPE_CHECKING:

        def __init__(
            self,
            resource_name: str,
            opts: pulumi.ResourceOptions | None = None,
            **inputs: Unpack[gcp_inputs.AlertPolicyInputs],
        ) -> None: ...


class NotificationChannel(GcpResource):
    """`gcp.monitoring.NotificationChannel`."""

    TYPE = "gcp:monitoring/notificationChannel:NotificationChannel"
    COMPUTED = ("name",)

    if TYPE_CHECKING:

        def __init__(
            self,
            resource_name: str,
            opts: pulumi.ResourceOptions | None = None,
            **inputs: Unpack[gcp_inputs.NotificationChannelInputs],
        ) -> None: ...

    @property
    def name(self) -> pulumi.Output[str]:
        """projects/<project>/notificationChannels/<id>."""
        return self.text("name")


class Budget(GcpResource):
    """`gcp.billing.Budget`."""

    TYPE = "gcp:billing/budget:Budget"

    if TYPE_CHECKING:

        def __init__(
            self,
            resource_name: str,
            opts: pulumi.ResourceOptions | None = None,
            **inputs: Unpack[gcp_inputs.BudgetInputs],
        ) -> None: ...


class Firewall(GcpResource):
    """`gcp.compute.Firewall`."""

    TYPE = "gcp:compute/firewall:Firewall"

    if TYPE_CHECKING:

        def __init__(
            self,
            resource_name: str,
            opts: pulumi.ResourceOptions | None = None,
            **inputs: Unpack[gcp_inputs.FirewallInputs],
        ) -> None: ...


class Router(GcpResource):
    """`gcp.compute.Router`."""

    TYPE = "gcp:compute/router:Router"
    COMPUTED = ("name",)

    if TYPE_CHECKING:

        def __init__(
            self,
            resource_name: str,
            opts: pulumi.ResourceOptions | None = None,
            **inputs: Unpack[gcp_inputs.RouterInputs],
        ) -> None: ...

    @property
    def name(self) -> pulumi.Output[str]:
        return self.text("name")


class RouterNat(GcpResource):
    """`gcp.compute.RouterNat`."""

    TYPE = "gcp:compute/routerNat:RouterNat"

    if TYPE_CHECKING:

        def __init__(
            self,
            resource_name: str,
            opts: pulumi.ResourceOptions | None = None,
            **inputs: Unpack[gcp_inputs.RouterNatInputs],
        ) -> None: ...


class Subnetwork(GcpResource):
    """`gcp.compute.Subnetwork`."""

    TYPE = "gcp:compute/subnetwork:Subnetwork"

    if TYPE_CHECKING:

        def __init__(
            self,
            resource_name: str,
            opts: pulumi.ResourceOptions | None = None,
            **inputs: Unpack[gcp_inputs.SubnetworkInputs],
        ) -> None: ...


class Address(GcpResource):
    """`gcp.compute.Address`."""

    TYPE = "gcp:compute/address:Address"
    SECRET_OUTPUTS = _LABELS
    COMPUTED = ("name", "address")

    if TYPE_CHECKING:

        def __init__(
            self,
            resource_name: str,
            opts: pulumi.ResourceOptions | None = None,
            **inputs: Unpack[gcp_inputs.AddressInputs],
        ) -> None: ...

    @property
    def name(self) -> pulumi.Output[str]:
        return self.text("name")

    @property
    def address(self) -> pulumi.Output[str]:
        """The IP address Google reserved."""
        return self.text("address")


class Cluster(GcpResource):
    """`gcp.container.Cluster`."""

    TYPE = "gcp:container/cluster:Cluster"
    SECRET_OUTPUTS = _LABELS
    COMPUTED = ("name", "endpoint", "controlPlaneEndpointsConfig")

    if TYPE_CHECKING:

        def __init__(
            self,
            resource_name: str,
            opts: pulumi.ResourceOptions | None = None,
            **inputs: Unpack[gcp_inputs.ClusterInputs],
        ) -> None: ...

    @property
    def name(self) -> pulumi.Output[str]:
        return self.text("name")

    @property
    def endpoint(self) -> pulumi.Output[str]:
        return self.text("endpoint")

    @property
    def control_plane_endpoints_config(self) -> pulumi.Output[dict[str, Any] | None]:
        """Wire keys: `dnsEndpointConfig.endpoint` is the IAM-guarded DNS endpoint."""
        return self.output("controlPlaneEndpointsConfig")


class NodePool(GcpResource):
    """`gcp.container.NodePool`."""

    TYPE = "gcp:container/nodePool:NodePool"
    COMPUTED = ("name",)

    if TYPE_CHECKING:

        def __init__(
            self,
            resource_name: str,
            opts: pulumi.ResourceOptions | None = None,
            **inputs: Unpack[gcp_inputs.NodePoolInputs],
        ) -> None: ...

    @property
    def name(self) -> pulumi.Output[str]:
        return self.text("name")
