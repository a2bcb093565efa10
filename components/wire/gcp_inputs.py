"""The keyword arguments of each wired pulumi-gcp resource, as TypedDicts: what the type checker holds a call to.

Why: the wire resources (components/wire/gcp.py) take `**inputs`, which mypy read as `Any`, so a misspelt key
or a value of the wrong type passed lint and the offline plan and reached the provider. pulumi-gcp's
generated resource classes state each argument's type, but their modules are slow to import (`pulumi_gcp.compute`
about a second) and its top-level `*Args` are classes, not TypedDicts. So each TypedDict here is derived from
the generated class's own `__init__` keyword arguments, one for one: the same names and value types, nested
blocks as pulumi-gcp's own `*ArgsDict` (only: a block is built in wire form by a typed builder, never as an
`*Args` object), and the properties the generated class refuses to go without (`Missing required property`)
`Required` and not None. The Google provider's (`GcpProviderInputs`) is the one exception: of its some 400
arguments it names the few the project sets, each typed as the generated class types it. gcp.py imports this
module for the type checker only, so no plan loads it, nor pulumi-gcp's `_inputs` modules.
tests/components/test_wire_gcp_inputs.py derives every class again from the installed pulumi-gcp and fails on
any difference, so a provider upgrade cannot leave a type behind.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Required, TypedDict

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    import pulumi
    from pulumi_gcp.artifactregistry import _inputs as artifactregistry
    from pulumi_gcp.billing import _inputs as billing
    from pulumi_gcp.cloudrunv2 import _inputs as cloudrunv2
    from pulumi_gcp.compute import _inputs as compute
    from pulumi_gcp.container import _inputs as container
    from pulumi_gcp.monitoring import _inputs as monitoring
    from pulumi_gcp.projects import _inputs as projects
    from pulumi_gcp.secretmanager import _inputs as secretmanager
    from pulumi_gcp.serviceaccount import _inputs as serviceaccount
    from pulumi_gcp.storage import _inputs as storage


class GcpProviderInputs(TypedDict, total=False):
    """The keyword arguments of `gcp.Provider` the project sets, as the generated class types them (it takes
    some 400; one the project does not set is refused until it is added here, from that class)."""

    impersonate_service_account: pulumi.Input[str | None]
    project: pulumi.Input[str | None]
    region: pulumi.Input[str | None]
    zone: pulumi.Input[str | None]


class CloudRunServiceInputs(TypedDict, total=False):
    """`gcp.cloudrunv2.Service`'s keyword arguments."""

    annotations: pulumi.Input[Mapping[str, pulumi.Input[str]] | None]
    binary_authorization: pulumi.Input[cloudrunv2.ServiceBinaryAuthorizationArgsDict | None]
    build_config: pulumi.Input[cloudrunv2.ServiceBuildConfigArgsDict | None]
    client: pulumi.Input[str | None]
    client_version: pulumi.Input[str | None]
    custom_audiences: pulumi.Input[Sequence[pulumi.Input[str]] | None]
    default_uri_disabled: pulumi.Input[bool | None]
    deletion_policy: pulumi.Input[str | None]
    deletion_protection: pulumi.Input[bool | None]
    description: pulumi.Input[str | None]
    functional_type: pulumi.Input[str | None]
    iap_enabled: pulumi.Input[bool | None]
    ingress: pulumi.Input[str | None]
    invoker_iam_disabled: pulumi.Input[bool | None]
    labels: pulumi.Input[Mapping[str, pulumi.Input[str]] | None]
    launch_stage: pulumi.Input[str | None]
    location: Required[pulumi.Input[str]]
    multi_region_settings: pulumi.Input[cloudrunv2.ServiceMultiRegionSettingsArgsDict | None]
    name: pulumi.Input[str | None]
    project: pulumi.Input[str | None]
    scaling: pulumi.Input[cloudrunv2.ServiceScalingArgsDict | None]
    ssh_enabled: pulumi.Input[bool | None]
    tags: pulumi.Input[Mapping[str, pulumi.Input[str]] | None]
    template: Required[pulumi.Input[cloudrunv2.ServiceTemplateArgsDict]]
    traffics: pulumi.Input[Sequence[pulumi.Input[cloudrunv2.ServiceTrafficArgsDict]] | None]


class CloudRunServiceIamMemberInputs(TypedDict, total=False):
    """`gcp.cloudrunv2.ServiceIamMember`'s keyword arguments."""

    condition: pulumi.Input[cloudrunv2.ServiceIamMemberConditionArgsDict | None]
    location: pulumi.Input[str | None]
    member: Required[pulumi.Input[str]]
    name: pulumi.Input[str | None]
    project: pulumi.Input[str | None]
    role: Required[pulumi.Input[str]]


class CloudRunJobInputs(TypedDict, total=False):
    """`gcp.cloudrunv2.Job`'s keyword arguments."""

    annotations: pulumi.Input[Mapping[str, pulumi.Input[str]] | None]
    binary_authorization: pulumi.Input[cloudrunv2.JobBinaryAuthorizationArgsDict | None]
    client: pulumi.Input[str | None]
    client_version: pulumi.Input[str | None]
    deletion_policy: pulumi.Input[str | None]
    deletion_protection: pulumi.Input[bool | None]
    functional_type: pulumi.Input[str | None]
    labels: pulumi.Input[Mapping[str, pulumi.Input[str]] | None]
    launch_stage: pulumi.Input[str | None]
    location: Required[pulumi.Input[str]]
    name: pulumi.Input[str | None]
    project: pulumi.Input[str | None]
    run_execution_token: pulumi.Input[str | None]
    start_execution_token: pulumi.Input[str | None]
    tags: pulumi.Input[Mapping[str, pulumi.Input[str]] | None]
    template: Required[pulumi.Input[cloudrunv2.JobTemplateArgsDict]]


class BucketInputs(TypedDict, total=False):
    """`gcp.storage.Bucket`'s keyword arguments."""

    autoclass: pulumi.Input[storage.BucketAutoclassArgsDict | None]
    cors: pulumi.Input[Sequence[pulumi.Input[storage.BucketCorArgsDict]] | None]
    custom_placement_config: pulumi.Input[storage.BucketCustomPlacementConfigArgsDict | None]
    default_event_based_hold: pulumi.Input[bool | None]
    deletion_policy: pulumi.Input[str | None]
    enable_object_retention: pulumi.Input[bool | None]
    encryption: pulumi.Input[storage.BucketEncryptionArgsDict | None]
    force_destroy: pulumi.Input[bool | None]
    hierarchical_namespace: pulumi.Input[storage.BucketHierarchicalNamespaceArgsDict | None]
    ip_filter: pulumi.Input[storage.BucketIpFilterArgsDict | None]
    labels: pulumi.Input[Mapping[str, pulumi.Input[str]] | None]
    lifecycle_rules: pulumi.Input[Sequence[pulumi.Input[storage.BucketLifecycleRuleArgsDict]] | None]
    location: Required[pulumi.Input[str]]
    logging: pulumi.Input[storage.BucketLoggingArgsDict | None]
    name: pulumi.Input[str | None]
    project: pulumi.Input[str | None]
    public_access_prevention: pulumi.Input[str | None]
    requester_pays: pulumi.Input[bool | None]
    retention_policy: pulumi.Input[storage.BucketRetentionPolicyArgsDict | None]
    rpo: pulumi.Input[str | None]
    soft_delete_policy: pulumi.Input[storage.BucketSoftDeletePolicyArgsDict | None]
    storage_class: pulumi.Input[str | None]
    uniform_bucket_level_access: pulumi.Input[bool | None]
    versioning: pulumi.Input[storage.BucketVersioningArgsDict | None]
    website: pulumi.Input[storage.BucketWebsiteArgsDict | None]


class BucketIamMemberInputs(TypedDict, total=False):
    """`gcp.storage.BucketIAMMember`'s keyword arguments."""

    bucket: Required[pulumi.Input[str]]
    condition: pulumi.Input[storage.BucketIAMMemberConditionArgsDict | None]
    member: Required[pulumi.Input[str]]
    role: Required[pulumi.Input[str]]


class ManagedFolderInputs(TypedDict, total=False):
    """`gcp.storage.ManagedFolder`'s keyword arguments."""

    bucket: Required[pulumi.Input[str]]
    deletion_policy: pulumi.Input[str | None]
    force_destroy: pulumi.Input[bool | None]
    name: pulumi.Input[str | None]


class ManagedFolderIamMemberInputs(TypedDict, total=False):
    """`gcp.storage.ManagedFolderIamMember`'s keyword arguments."""

    bucket: Required[pulumi.Input[str]]
    condition: pulumi.Input[storage.ManagedFolderIamMemberConditionArgsDict | None]
    managed_folder: Required[pulumi.Input[str]]
    member: Required[pulumi.Input[str]]
    role: Required[pulumi.Input[str]]


class BucketObjectInputs(TypedDict, total=False):
    """`gcp.storage.BucketObject`'s keyword arguments."""

    bucket: Required[pulumi.Input[str]]
    cache_control: pulumi.Input[str | None]
    content: pulumi.Input[str | None]
    content_disposition: pulumi.Input[str | None]
    content_encoding: pulumi.Input[str | None]
    content_language: pulumi.Input[str | None]
    content_type: pulumi.Input[str | None]
    contexts: pulumi.Input[storage.BucketObjectContextsArgsDict | None]
    customer_encryption: pulumi.Input[storage.BucketObjectCustomerEncryptionArgsDict | None]
    deletion_policy: pulumi.Input[str | None]
    detect_md5hash: pulumi.Input[str | None]
    event_based_hold: pulumi.Input[bool | None]
    force_empty_content_type: pulumi.Input[bool | None]
    kms_key_name: pulumi.Input[str | None]
    metadata: pulumi.Input[Mapping[str, pulumi.Input[str]] | None]
    name: pulumi.Input[str | None]
    retention: pulumi.Input[storage.BucketObjectRetentionArgsDict | None]
    source: pulumi.Input[pulumi.Asset | pulumi.Archive | None]
    source_md5hash: pulumi.Input[str | None]
    storage_class: pulumi.Input[str | None]
    temporary_hold: pulumi.Input[bool | None]


class SecretInputs(TypedDict, total=False):
    """`gcp.secretmanager.Secret`'s keyword arguments."""

    annotations: pulumi.Input[Mapping[str, pulumi.Input[str]] | None]
    deletion_policy: pulumi.Input[str | None]
    deletion_protection: pulumi.Input[bool | None]
    expire_time: pulumi.Input[str | None]
    labels: pulumi.Input[Mapping[str, pulumi.Input[str]] | None]
    project: pulumi.Input[str | None]
    replication: Required[pulumi.Input[secretmanager.SecretReplicationArgsDict]]
    rotation: pulumi.Input[secretmanager.SecretRotationArgsDict | None]
    secret_id: pulumi.Input[str | None]
    secret_type: pulumi.Input[str | None]
    tags: pulumi.Input[Mapping[str, pulumi.Input[str]] | None]
    topics: pulumi.Input[Sequence[pulumi.Input[secretmanager.SecretTopicArgsDict]] | None]
    ttl: pulumi.Input[str | None]
    version_aliases: pulumi.Input[Mapping[str, pulumi.Input[str]] | None]
    version_destroy_ttl: pulumi.Input[str | None]


class SecretVersionInputs(TypedDict, total=False):
    """`gcp.secretmanager.SecretVersion`'s keyword arguments."""

    deletion_policy: pulumi.Input[str | None]
    enabled: pulumi.Input[bool | None]
    is_secret_data_base64: pulumi.Input[bool | None]
    project: pulumi.Input[str | None]
    secret: Required[pulumi.Input[str]]
    secret_data: pulumi.Input[str | None]
    secret_data_wo: pulumi.Input[str | None]
    secret_data_wo_version: pulumi.Input[str | None]


class SecretIamMemberInputs(TypedDict, total=False):
    """`gcp.secretmanager.SecretIamMember`'s keyword arguments."""

    condition: pulumi.Input[secretmanager.SecretIamMemberConditionArgsDict | None]
    member: Required[pulumi.Input[str]]
    project: pulumi.Input[str | None]
    role: Required[pulumi.Input[str]]
    secret_id: Required[pulumi.Input[str]]


class ProjectServiceInputs(TypedDict, total=False):
    """`gcp.projects.Service`'s keyword arguments."""

    check_if_service_has_usage_on_destroy: pulumi.Input[bool | None]
    deletion_policy: pulumi.Input[str | None]
    disable_dependent_services: pulumi.Input[bool | None]
    disable_on_destroy: pulumi.Input[bool | None]
    project: pulumi.Input[str | None]
    service: Required[pulumi.Input[str]]


class ProjectIamMemberInputs(TypedDict, total=False):
    """`gcp.projects.IAMMember`'s keyword arguments."""

    condition: pulumi.Input[projects.IAMMemberConditionArgsDict | None]
    member: Required[pulumi.Input[str]]
    project: Required[pulumi.Input[str]]
    role: Required[pulumi.Input[str]]


class ServiceAccountInputs(TypedDict, total=False):
    """`gcp.serviceaccount.Account`'s keyword arguments."""

    account_id: pulumi.Input[str | None]
    create_ignore_already_exists: pulumi.Input[bool | None]
    deletion_policy: pulumi.Input[str | None]
    description: pulumi.Input[str | None]
    disabled: pulumi.Input[bool | None]
    display_name: pulumi.Input[str | None]
    project: pulumi.Input[str | None]


class ServiceAccountIamMemberInputs(TypedDict, total=False):
    """`gcp.serviceaccount.IAMMember`'s keyword arguments."""

    condition: pulumi.Input[serviceaccount.IAMMemberConditionArgsDict | None]
    member: Required[pulumi.Input[str]]
    role: Required[pulumi.Input[str]]
    service_account_id: Required[pulumi.Input[str]]


class RepositoryInputs(TypedDict, total=False):
    """`gcp.artifactregistry.Repository`'s keyword arguments."""

    cleanup_policies: pulumi.Input[Sequence[pulumi.Input[artifactregistry.RepositoryCleanupPolicyArgsDict]] | None]
    cleanup_policy_dry_run: pulumi.Input[bool | None]
    deletion_policy: pulumi.Input[str | None]
    description: pulumi.Input[str | None]
    docker_config: pulumi.Input[artifactregistry.RepositoryDockerConfigArgsDict | None]
    format: Required[pulumi.Input[str]]
    kms_key_name: pulumi.Input[str | None]
    labels: pulumi.Input[Mapping[str, pulumi.Input[str]] | None]
    location: pulumi.Input[str | None]
    maven_config: pulumi.Input[artifactregistry.RepositoryMavenConfigArgsDict | None]
    mode: pulumi.Input[str | None]
    project: pulumi.Input[str | None]
    remote_repository_config: pulumi.Input[artifactregistry.RepositoryRemoteRepositoryConfigArgsDict | None]
    repository_id: Required[pulumi.Input[str]]
    virtual_repository_config: pulumi.Input[artifactregistry.RepositoryVirtualRepositoryConfigArgsDict | None]
    vulnerability_scanning_config: pulumi.Input[artifactregistry.RepositoryVulnerabilityScanningConfigArgsDict | None]


class RepositoryIamMemberInputs(TypedDict, total=False):
    """`gcp.artifactregistry.RepositoryIamMember`'s keyword arguments."""

    condition: pulumi.Input[artifactregistry.RepositoryIamMemberConditionArgsDict | None]
    location: pulumi.Input[str | None]
    member: Required[pulumi.Input[str]]
    project: pulumi.Input[str | None]
    repository: Required[pulumi.Input[str]]
    role: Required[pulumi.Input[str]]


class DashboardInputs(TypedDict, total=False):
    """`gcp.monitoring.Dashboard`'s keyword arguments."""

    dashboard_json: Required[pulumi.Input[str]]
    deletion_policy: pulumi.Input[str | None]
    project: pulumi.Input[str | None]


class AlertPolicyInputs(TypedDict, total=False):
    """`gcp.monitoring.AlertPolicy`'s keyword arguments."""

    alert_strategy: pulumi.Input[monitoring.AlertPolicyAlertStrategyArgsDict | None]
    combiner: Required[pulumi.Input[str]]
    conditions: Required[pulumi.Input[Sequence[pulumi.Input[monitoring.AlertPolicyConditionArgsDict]]]]
    deletion_policy: pulumi.Input[str | None]
    display_name: Required[pulumi.Input[str]]
    documentation: pulumi.Input[monitoring.AlertPolicyDocumentationArgsDict | None]
    enabled: pulumi.Input[bool | None]
    notification_channels: pulumi.Input[Sequence[pulumi.Input[str]] | None]
    project: pulumi.Input[str | None]
    severity: pulumi.Input[str | None]
    user_labels: pulumi.Input[Mapping[str, pulumi.Input[str]] | None]


class NotificationChannelInputs(TypedDict, total=False):
    """`gcp.monitoring.NotificationChannel`'s keyword arguments."""

    deletion_policy: pulumi.Input[str | None]
    description: pulumi.Input[str | None]
    display_name: pulumi.Input[str | None]
    enabled: pulumi.Input[bool | None]
    force_delete: pulumi.Input[bool | None]
    labels: pulumi.Input[Mapping[str, pulumi.Input[str]] | None]
    project: pulumi.Input[str | None]
    sensitive_labels: pulumi.Input[monitoring.NotificationChannelSensitiveLabelsArgsDict | None]
    type: Required[pulumi.Input[str]]
    user_labels: pulumi.Input[Mapping[str, pulumi.Input[str]] | None]


class BudgetInputs(TypedDict, total=False):
    """`gcp.billing.Budget`'s keyword arguments."""

    all_updates_rule: pulumi.Input[billing.BudgetAllUpdatesRuleArgsDict | None]
    amount: Required[pulumi.Input[billing.BudgetAmountArgsDict]]
    billing_account: Required[pulumi.Input[str]]
    budget_filter: pulumi.Input[billing.BudgetBudgetFilterArgsDict | None]
    deletion_policy: pulumi.Input[str | None]
    display_name: pulumi.Input[str | None]
    ownership_scope: pulumi.Input[str | None]
    threshold_rules: pulumi.Input[Sequence[pulumi.Input[billing.BudgetThresholdRuleArgsDict]] | None]


class FirewallInputs(TypedDict, total=False):
    """`gcp.compute.Firewall`'s keyword arguments."""

    allows: pulumi.Input[Sequence[pulumi.Input[compute.FirewallAllowArgsDict]] | None]
    deletion_policy: pulumi.Input[str | None]
    denies: pulumi.Input[Sequence[pulumi.Input[compute.FirewallDenyArgsDict]] | None]
    description: pulumi.Input[str | None]
    destination_ranges: pulumi.Input[Sequence[pulumi.Input[str]] | None]
    direction: pulumi.Input[str | None]
    disabled: pulumi.Input[bool | None]
    enable_logging: pulumi.Input[bool | None]
    log_config: pulumi.Input[compute.FirewallLogConfigArgsDict | None]
    name: pulumi.Input[str | None]
    network: Required[pulumi.Input[str]]
    params: pulumi.Input[compute.FirewallParamsArgsDict | None]
    priority: pulumi.Input[int | None]
    project: pulumi.Input[str | None]
    source_ranges: pulumi.Input[Sequence[pulumi.Input[str]] | None]
    source_service_accounts: pulumi.Input[Sequence[pulumi.Input[str]] | None]
    source_tags: pulumi.Input[Sequence[pulumi.Input[str]] | None]
    target_service_accounts: pulumi.Input[Sequence[pulumi.Input[str]] | None]
    target_tags: pulumi.Input[Sequence[pulumi.Input[str]] | None]


class RouterInputs(TypedDict, total=False):
    """`gcp.compute.Router`'s keyword arguments."""

    bgp: pulumi.Input[compute.RouterBgpArgsDict | None]
    deletion_policy: pulumi.Input[str | None]
    description: pulumi.Input[str | None]
    encrypted_interconnect_router: pulumi.Input[bool | None]
    md5_authentication_keys: pulumi.Input[compute.RouterMd5AuthenticationKeysArgsDict | None]
    name: pulumi.Input[str | None]
    ncc_gateway: pulumi.Input[str | None]
    network: pulumi.Input[str | None]
    params: pulumi.Input[compute.RouterParamsArgsDict | None]
    project: pulumi.Input[str | None]
    region: pulumi.Input[str | None]


class RouterNatInputs(TypedDict, total=False):
    """`gcp.compute.RouterNat`'s keyword arguments."""

    auto_network_tier: pulumi.Input[str | None]
    deletion_policy: pulumi.Input[str | None]
    drain_nat_ips: pulumi.Input[Sequence[pulumi.Input[str]] | None]
    enable_dynamic_port_allocation: pulumi.Input[bool | None]
    enable_endpoint_independent_mapping: pulumi.Input[bool | None]
    endpoint_types: pulumi.Input[Sequence[pulumi.Input[str]] | None]
    icmp_idle_timeout_sec: pulumi.Input[int | None]
    initial_nat_ips: pulumi.Input[Sequence[pulumi.Input[str]] | None]
    log_config: pulumi.Input[compute.RouterNatLogConfigArgsDict | None]
    max_ports_per_vm: pulumi.Input[int | None]
    min_ports_per_vm: pulumi.Input[int | None]
    name: pulumi.Input[str | None]
    nat64_subnetworks: pulumi.Input[Sequence[pulumi.Input[compute.RouterNatNat64SubnetworkArgsDict]] | None]
    nat_ip_allocate_option: pulumi.Input[str | None]
    nat_ips: pulumi.Input[Sequence[pulumi.Input[str]] | None]
    project: pulumi.Input[str | None]
    region: pulumi.Input[str | None]
    router: Required[pulumi.Input[str]]
    rules: pulumi.Input[Sequence[pulumi.Input[compute.RouterNatRuleArgsDict]] | None]
    source_subnetwork_ip_ranges_to_nat: Required[pulumi.Input[str]]
    source_subnetwork_ip_ranges_to_nat64: pulumi.Input[str | None]
    subnetworks: pulumi.Input[Sequence[pulumi.Input[compute.RouterNatSubnetworkArgsDict]] | None]
    tcp_established_idle_timeout_sec: pulumi.Input[int | None]
    tcp_time_wait_timeout_sec: pulumi.Input[int | None]
    tcp_transitory_idle_timeout_sec: pulumi.Input[int | None]
    type: pulumi.Input[str | None]
    udp_idle_timeout_sec: pulumi.Input[int | None]


class SubnetworkInputs(TypedDict, total=False):
    """`gcp.compute.Subnetwork`'s keyword arguments."""

    allow_subnet_cidr_routes_overlap: pulumi.Input[bool | None]
    deletion_policy: pulumi.Input[str | None]
    description: pulumi.Input[str | None]
    external_ipv6_prefix: pulumi.Input[str | None]
    internal_ipv6_prefix: pulumi.Input[str | None]
    ip_cidr_range: pulumi.Input[str | None]
    ip_collection: pulumi.Input[str | None]
    ipv6_access_type: pulumi.Input[str | None]
    log_config: pulumi.Input[compute.SubnetworkLogConfigArgsDict | None]
    name: pulumi.Input[str | None]
    network: Required[pulumi.Input[str]]
    params: pulumi.Input[compute.SubnetworkParamsArgsDict | None]
    private_ip_google_access: pulumi.Input[bool | None]
    private_ipv6_google_access: pulumi.Input[str | None]
    project: pulumi.Input[str | None]
    purpose: pulumi.Input[str | None]
    region: pulumi.Input[str | None]
    reserved_internal_range: pulumi.Input[str | None]
    resolve_subnet_mask: pulumi.Input[str | None]
    role: pulumi.Input[str | None]
    secondary_ip_ranges: pulumi.Input[Sequence[pulumi.Input[compute.SubnetworkSecondaryIpRangeArgsDict]] | None]
    send_secondary_ip_range_if_empty: pulumi.Input[bool | None]
    stack_type: pulumi.Input[str | None]


class AddressInputs(TypedDict, total=False):
    """`gcp.compute.Address`'s keyword arguments."""

    address: pulumi.Input[str | None]
    address_type: pulumi.Input[str | None]
    deletion_policy: pulumi.Input[str | None]
    description: pulumi.Input[str | None]
    ip_collection: pulumi.Input[str | None]
    ip_version: pulumi.Input[str | None]
    ipv6_endpoint_type: pulumi.Input[str | None]
    labels: pulumi.Input[Mapping[str, pulumi.Input[str]] | None]
    name: pulumi.Input[str | None]
    network: pulumi.Input[str | None]
    network_tier: pulumi.Input[str | None]
    prefix_length: pulumi.Input[int | None]
    project: pulumi.Input[str | None]
    purpose: pulumi.Input[str | None]
    region: pulumi.Input[str | None]
    subnetwork: pulumi.Input[str | None]


class ClusterInputs(TypedDict, total=False):
    """`gcp.container.Cluster`'s keyword arguments."""

    addons_config: pulumi.Input[container.ClusterAddonsConfigArgsDict | None]
    allow_net_admin: pulumi.Input[bool | None]
    anonymous_authentication_config: pulumi.Input[container.ClusterAnonymousAuthenticationConfigArgsDict | None]
    authenticator_groups_config: pulumi.Input[container.ClusterAuthenticatorGroupsConfigArgsDict | None]
    autopilot_cluster_policy_config: pulumi.Input[container.ClusterAutopilotClusterPolicyConfigArgsDict | None]
    autopilot_privileged_admissions: pulumi.Input[Sequence[pulumi.Input[str]] | None]
    binary_authorization: pulumi.Input[container.ClusterBinaryAuthorizationArgsDict | None]
    cluster_autoscaling: pulumi.Input[container.ClusterClusterAutoscalingArgsDict | None]
    cluster_ipv4_cidr: pulumi.Input[str | None]
    cluster_telemetry: pulumi.Input[container.ClusterClusterTelemetryArgsDict | None]
    confidential_nodes: pulumi.Input[container.ClusterConfidentialNodesArgsDict | None]
    control_plane_endpoints_config: pulumi.Input[container.ClusterControlPlaneEndpointsConfigArgsDict | None]
    cost_management_config: pulumi.Input[container.ClusterCostManagementConfigArgsDict | None]
    database_encryption: pulumi.Input[container.ClusterDatabaseEncryptionArgsDict | None]
    datapath_provider: pulumi.Input[str | None]
    dataplane_optimization_mode: pulumi.Input[str | None]
    default_max_pods_per_node: pulumi.Input[int | None]
    default_snat_status: pulumi.Input[container.ClusterDefaultSnatStatusArgsDict | None]
    deletion_policy: pulumi.Input[str | None]
    deletion_protection: pulumi.Input[bool | None]
    description: pulumi.Input[str | None]
    desired_emulated_version: pulumi.Input[str | None]
    disable_l4_lb_firewall_reconciliation: pulumi.Input[bool | None]
    dns_config: pulumi.Input[container.ClusterDnsConfigArgsDict | None]
    enable_autopilot: pulumi.Input[bool | None]
    enable_cilium_clusterwide_network_policy: pulumi.Input[bool | None]
    enable_fqdn_network_policy: pulumi.Input[bool | None]
    enable_intranode_visibility: pulumi.Input[bool | None]
    enable_k8s_beta_apis: pulumi.Input[container.ClusterEnableK8sBetaApisArgsDict | None]
    enable_kubernetes_alpha: pulumi.Input[bool | None]
    enable_l4_ilb_subsetting: pulumi.Input[bool | None]
    enable_legacy_abac: pulumi.Input[bool | None]
    enable_multi_networking: pulumi.Input[bool | None]
    enable_shielded_nodes: pulumi.Input[bool | None]
    enable_tpu: pulumi.Input[bool | None]
    enterprise_config: pulumi.Input[container.ClusterEnterpriseConfigArgsDict | None]
    fleet: pulumi.Input[container.ClusterFleetArgsDict | None]
    gateway_api_config: pulumi.Input[container.ClusterGatewayApiConfigArgsDict | None]
    gke_auto_upgrade_config: pulumi.Input[container.ClusterGkeAutoUpgradeConfigArgsDict | None]
    identity_service_config: pulumi.Input[container.ClusterIdentityServiceConfigArgsDict | None]
    ignore_node_count_changes: pulumi.Input[bool | None]
    in_transit_encryption_config: pulumi.Input[str | None]
    initial_node_count: pulumi.Input[int | None]
    ip_allocation_policy: pulumi.Input[container.ClusterIpAllocationPolicyArgsDict | None]
    location: pulumi.Input[str | None]
    logging_config: pulumi.Input[container.ClusterLoggingConfigArgsDict | None]
    logging_service: pulumi.Input[str | None]
    maintenance_policy: pulumi.Input[container.ClusterMaintenancePolicyArgsDict | None]
    managed_machine_learning_diagnostics_config: pulumi.Input[
        container.ClusterManagedMachineLearningDiagnosticsConfigArgsDict | None
    ]
    managed_opentelemetry_config: pulumi.Input[container.ClusterManagedOpentelemetryConfigArgsDict | None]
    master_auth: pulumi.Input[container.ClusterMasterAuthArgsDict | None]
    master_authorized_networks_config: pulumi.Input[container.ClusterMasterAuthorizedNetworksConfigArgsDict | None]
    mesh_certificates: pulumi.Input[container.ClusterMeshCertificatesArgsDict | None]
    min_master_version: pulumi.Input[str | None]
    monitoring_config: pulumi.Input[container.ClusterMonitoringConfigArgsDict | None]
    monitoring_service: pulumi.Input[str | None]
    name: pulumi.Input[str | None]
    network: pulumi.Input[str | None]
    network_performance_config: pulumi.Input[container.ClusterNetworkPerformanceConfigArgsDict | None]
    network_policy: pulumi.Input[container.ClusterNetworkPolicyArgsDict | None]
    networking_mode: pulumi.Input[str | None]
    node_config: pulumi.Input[container.ClusterNodeConfigArgsDict | None]
    node_creation_config: pulumi.Input[container.ClusterNodeCreationConfigArgsDict | None]
    node_locations: pulumi.Input[Sequence[pulumi.Input[str]] | None]
    node_pool_auto_config: pulumi.Input[container.ClusterNodePoolAutoConfigArgsDict | None]
    node_pool_defaults: pulumi.Input[container.ClusterNodePoolDefaultsArgsDict | None]
    node_pools: pulumi.Input[Sequence[pulumi.Input[container.ClusterNodePoolArgsDict]] | None]
    node_version: pulumi.Input[str | None]
    notification_config: pulumi.Input[container.ClusterNotificationConfigArgsDict | None]
    pod_autoscaling: pulumi.Input[container.ClusterPodAutoscalingArgsDict | None]
    pod_security_policy_config: pulumi.Input[container.ClusterPodSecurityPolicyConfigArgsDict | None]
    private_cluster_config: pulumi.Input[container.ClusterPrivateClusterConfigArgsDict | None]
    private_ipv6_google_access: pulumi.Input[str | None]
    project: pulumi.Input[str | None]
    protect_config: pulumi.Input[container.ClusterProtectConfigArgsDict | None]
    rbac_binding_config: pulumi.Input[container.ClusterRbacBindingConfigArgsDict | None]
    release_channel: pulumi.Input[container.ClusterReleaseChannelArgsDict | None]
    remove_default_node_pool: pulumi.Input[bool | None]
    resource_labels: pulumi.Input[Mapping[str, pulumi.Input[str]] | None]
    resource_usage_export_config: pulumi.Input[container.ClusterResourceUsageExportConfigArgsDict | None]
    rollback_safe_upgrade: pulumi.Input[container.ClusterRollbackSafeUpgradeArgsDict | None]
    secret_manager_config: pulumi.Input[container.ClusterSecretManagerConfigArgsDict | None]
    secret_sync_config: pulumi.Input[container.ClusterSecretSyncConfigArgsDict | None]
    security_posture_config: pulumi.Input[container.ClusterSecurityPostureConfigArgsDict | None]
    service_external_ips_config: pulumi.Input[container.ClusterServiceExternalIpsConfigArgsDict | None]
    skip_node_pool_refresh: pulumi.Input[bool | None]
    subnetwork: pulumi.Input[str | None]
    tpu_config: pulumi.Input[container.ClusterTpuConfigArgsDict | None]
    user_managed_keys_config: pulumi.Input[container.ClusterUserManagedKeysConfigArgsDict | None]
    vertical_pod_autoscaling: pulumi.Input[container.ClusterVerticalPodAutoscalingArgsDict | None]
    workload_alts_config: pulumi.Input[container.ClusterWorkloadAltsConfigArgsDict | None]
    workload_identity_config: pulumi.Input[container.ClusterWorkloadIdentityConfigArgsDict | None]


class NodePoolInputs(TypedDict, total=False):
    """`gcp.container.NodePool`'s keyword arguments."""

    autoscaling: pulumi.Input[container.NodePoolAutoscalingArgsDict | None]
    best_effort_provisioning: pulumi.Input[container.NodePoolBestEffortProvisioningArgsDict | None]
    cluster: Required[pulumi.Input[str]]
    deletion_policy: pulumi.Input[str | None]
    ignore_node_count_changes: pulumi.Input[bool | None]
    initial_node_count: pulumi.Input[int | None]
    location: pulumi.Input[str | None]
    maintenance_policies: pulumi.Input[Sequence[pulumi.Input[container.NodePoolMaintenancePolicyArgsDict]] | None]
    management: pulumi.Input[container.NodePoolManagementArgsDict | None]
    max_pods_per_node: pulumi.Input[int | None]
    name: pulumi.Input[str | None]
    name_prefix: pulumi.Input[str | None]
    network_config: pulumi.Input[container.NodePoolNetworkConfigArgsDict | None]
    node_config: pulumi.Input[container.NodePoolNodeConfigArgsDict | None]
    node_count: pulumi.Input[int | None]
    node_drain_configs: pulumi.Input[Sequence[pulumi.Input[container.NodePoolNodeDrainConfigArgsDict]] | None]
    node_locations: pulumi.Input[Sequence[pulumi.Input[str]] | None]
    placement_policy: pulumi.Input[container.NodePoolPlacementPolicyArgsDict | None]
    project: pulumi.Input[str | None]
    queued_provisioning: pulumi.Input[container.NodePoolQueuedProvisioningArgsDict | None]
    upgrade_settings: pulumi.Input[container.NodePoolUpgradeSettingsArgsDict | None]
    version: pulumi.Input[str | None]
