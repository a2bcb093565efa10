"""The base every settings model shares, so that every stack file reads and fails the same way.

Why: stack files are written in Pulumi's camelCase (`maxModelLen`), Python reads snake_case, and a
typo anywhere (top level or nested) must be an error naming the key, never a silently ignored default.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel


class SettingsModel(BaseModel):
    """Frozen, typo-proof, camelCase-in-YAML settings."""

    # Validators are built on first use (defer_build): a stack validates its own platform's model only
    # (stacks.settings.stack_variant), so a plan never builds the blocks of the platforms it is not.
    model_config = ConfigDict(
        defer_build=True,
        frozen=True,
        extra="forbid",
        alias_generator=to_camel,
        populate_by_name=True,
        validate_default=True,
        str_strip_whitespace=True,
        # inf and NaN are never a setting: `.inf` made alerts that cannot fire and budgets that overflow.
        allow_inf_nan=False,
    )
