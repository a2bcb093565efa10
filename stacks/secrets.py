"""The stack's secret config values: read as Pulumi secrets, never parsed into the settings.

Why separate from `stacks.loading`: the settings models are frozen plain data that the preview prints
and tests compare; a token there would be one `repr` away from a log line. Secret values therefore stay
`pulumi.Output` secrets from the config to the Secret Manager version that stores them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pulumi

# The Hugging Face user access token, for gated repos (and higher Hub rate limits).
HF_TOKEN_KEY = "hfToken"  # noqa: S105 - the config key, not a token
# Keys in the project's config namespace that hold secrets; `stacks.loading` skips them.
SECRET_KEYS = frozenset({HF_TOKEN_KEY})


def set_secret_command(key: str, project: str = "gemma-serving") -> str:
    return f"pulumi config set --secret {project}:{key} <value>"


class PlainSecretError(ValueError):
    """A secret key was stored as plain text in the stack file."""


def hf_token(project: str = "gemma-serving") -> pulumi.Output[str] | None:
    """The Hugging Face token as a Pulumi secret, or None when the stack has none.

    Refuses a token stored without `--secret`: it would sit in plain text in Pulumi.<stack>.yaml.
    """
    import pulumi  # noqa: PLC0415 - settings code and tests need no Pulumi runtime
    from pulumi.runtime.config import is_config_secret  # noqa: PLC0415 - as above

    token = pulumi.Config(project).get_secret(HF_TOKEN_KEY)
    if token is None:
        return None
    if not is_config_secret(f"{project}:{HF_TOKEN_KEY}"):
        raise PlainSecretError(
            f"{project}:{HF_TOKEN_KEY} is stored in plain text in the stack file; remove it with "
            f"`pulumi config rm {project}:{HF_TOKEN_KEY}` and set it with `{set_secret_command(HF_TOKEN_KEY, project)}`"
        )
    return token
