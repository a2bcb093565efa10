"""Provider resources registered by type token with wire-form (camelCase) inputs, without their SDK subpackage.

Why: a provider SDK's generated subpackage loads every type of its service on the first use of any class
(`pulumi_gcp.cloudrunv2` about 200 ms, `pulumi_gcp.compute` about a second, `pulumi_kubernetes.core.v1`
half a second on a quiet machine), and every `pulumi preview`, `pulumi up` and offline plan paid it: the
plan of a Cloud Run stack took 1.9 s, a GKE stack's 5 s (issue 37). A resource here registers exactly
what the generated class registers: the same type token, the same camelCase wire properties, the
provider's own version (its SDK's resource defaults), the same additional secret outputs, aliases and
replace-on-changes, so the engine, the provider and the policy pack cannot tell them apart. The offline
plan's full registration requests were compared before and after (docs/architecture.md, "Plan speed");
tests/provider_rules.py still checks every input against pulumi_gcp's own generated input types.

Inputs are given in Python's snake_case, as to the generated classes, and sent camelCase (`wire`), the
rule the generated SDKs' own names follow; nested values are plain mappings in the same wire form.

Typed blocks: a wired resource's top-level inputs are typed (components/wire/gcp_inputs.py), and each nested
block is typed as pulumi-gcp's `*ArgsDict` for it, which a block built with the untyped `wire` (a
`dict[str, Any]`) does not satisfy. So each service has a module of typed builders here (`cloud_run`,
`cloud_run_job`, `artifactregistry`, `billing`, `compute`, `container`, `monitoring`, `secretmanager`,
`storage`): a builder takes the keyword arguments of its `*ArgsDict` (imported for the type checker only, so no
plan loads that pulumi-gcp subpackage) and returns the block exactly as `wire` does (camelCase, None fields left
out), typed as the `*ArgsDict` its fields were checked against: in wire form, to be read by the provider, not by
code.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar, cast

import pulumi


def camel(name: str) -> str:
    """`max_instance_count` -> `maxInstanceCount`: a generated SDK's Python name back to its wire name."""
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def wire(**fields: Any) -> dict[str, Any]:  # noqa: ANN401 - any input value
    """A nested input (what a generated `*Args` class would hold) in wire form; None fields are left out."""
    return {camel(key): value for key, value in fields.items() if value is not None}


class WireResource(pulumi.CustomResource):
    """A provider's resource by type token; subclasses name the token and what the generated class adds."""

    TYPE: ClassVar[str]
    # Output-only properties the project reads (wire names): the SDK makes an Output attribute per key.
    COMPUTED: ClassVar[tuple[str, ...]] = ()
    # Inputs the generated class wraps in a secret, and outputs it marks secret (wire names).
    SECRET_INPUTS: ClassVar[tuple[str, ...]] = ()
    SECRET_OUTPUTS: ClassVar[tuple[str, ...]] = ()
    # Former type tokens the generated class aliases, and properties whose change replaces the resource.
    ALIASES: ClassVar[tuple[str, ...]] = ()
    REPLACE_ON_CHANGES: ClassVar[tuple[str, ...]] = ()
    # The SDK's resource defaults (the provider plugin's version and download URL).
    DEFAULTS: ClassVar[Callable[[], pulumi.ResourceOptions]]

    def __init__(self, resource_name: str, opts: pulumi.ResourceOptions | None = None, **inputs: Any) -> None:  # noqa: ANN401 - any input
        # In the generated classes' order: the SDK's defaults, the caller's options, then secrets, aliases, replaces.
        merged = pulumi.ResourceOptions.merge(type(self).DEFAULTS(), opts)
        if self.SECRET_OUTPUTS:
            merged = pulumi.ResourceOptions.merge(
                merged, pulumi.ResourceOptions(additional_secret_outputs=list(self.SECRET_OUTPUTS))
            )
        if self.ALIASES:
            merged = pulumi.ResourceOptions.merge(
                merged, pulumi.ResourceOptions(aliases=[pulumi.Alias(type_=token) for token in self.ALIASES])
            )
        if self.REPLACE_ON_CHANGES:
            merged = pulumi.ResourceOptions.merge(
                merged, pulumi.ResourceOptions(replace_on_changes=list(self.REPLACE_ON_CHANGES))
            )
        props: dict[str, Any] = wire(**inputs)
        for key in self.SECRET_INPUTS:
            if key in props:
                props[key] = pulumi.Output.secret(props[key])
        props.update({key: None for key in self.COMPUTED if key not in props})
        super().__init__(self.TYPE, resource_name, props, merged)

    def output(self, wire_name: str) -> pulumi.Output[Any]:
        """An input or computed property as the engine returns it (the SDK sets one attribute per wire key)."""
        return cast("pulumi.Output[Any]", self.__dict__[wire_name])

    def text(self, wire_name: str) -> pulumi.Output[str]:
        return cast("pulumi.Output[str]", self.output(wire_name))
