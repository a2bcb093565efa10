"""The base every settings model shares, so that every stack file reads and fails the same way.

Why: stack files are written in Pulumi's camelCase (`maxModelLen`), Python reads snake_case, and a
typo anywhere (top level or nested) must be an error naming the key, never a silently ignored default.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel


class SettingsModel(BaseModel):
    """Frozen, typo-proof, camelCase-in-YAML settings."""

    model_config = ConfigDict(
        frozen=True,
        extra="forbid",
        alias_generator=to_camel,
        populate_by_name=True,
        validate_default=True,
        str_strip_whitespace=True,
    )
