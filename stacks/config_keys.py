"""Config keys outside the project's own settings: a misspelt provider key is named, not ignored.

Why: the settings refuse any unknown `gemma-serving:` key, but `gcp:projet` (for gcp:project) sat
unnoticed: the provider ignores keys it does not know, and the offline plan fell back to its
placeholder project without a word. Keys of the providers the program uses are checked against the
provider's own list, and a namespace one letter off the project's name is named as the typo it is.
"""

from __future__ import annotations

import difflib
import functools
import re
from collections.abc import Iterable, Mapping
from importlib import resources

# Providers the program configures; others (ESC, tools) may keep keys of their own namespaces.
_PROVIDER_PACKAGES = {"gcp": "pulumi_gcp"}
_CONFIG_GET = re.compile(r"__config__\.get\w*\('([A-Za-z0-9]+)'")


@functools.cache
def provider_keys(namespace: str) -> frozenset[str]:
    """The config keys a provider reads, from its installed SDK's `config/vars.py` (pulumi-gcp's list of
    `gcp:*` settings), so the list moves with the pinned provider version."""
    package = _PROVIDER_PACKAGES[namespace]
    source = resources.files(package).joinpath("config", "vars.py").read_text(encoding="utf-8")
    return frozenset(_CONFIG_GET.findall(source))


def _suggestion(word: str, candidates: Iterable[str]) -> str:
    close = difflib.get_close_matches(word, list(candidates), n=1, cutoff=0.75)
    return f"; did you mean {close[0]}?" if close else ""


def config_key_problems(config: Mapping[str, str], project: str) -> list[str]:
    """One line per key that would be silently ignored: unknown provider keys, near-miss namespaces."""
    problems = []
    for key in sorted(config):
        namespace, colon, name = key.partition(":")
        if not colon or namespace == project:
            continue
        if namespace in _PROVIDER_PACKAGES:
            known = provider_keys(namespace)
            if name not in known:
                hint = _suggestion(name, known)
                problems.append(
                    f"{key}: not a setting of the {namespace} provider, which would ignore it"
                    f"{hint.replace('you mean ', f'you mean {namespace}:')}"
                )
        elif difflib.get_close_matches(namespace, [project], n=1, cutoff=0.75):
            problems.append(
                f"{key}: the namespace {namespace!r} is not this project's ({project!r}), so the program never "
                f"reads it; did you mean {project}:{name}?"
            )
    return problems
