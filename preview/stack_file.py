"""Read `Pulumi.yaml` and `Pulumi.<stack>.yaml` into the flat config map the Pulumi engine would pass.

Why: without the CLI nobody hands the program its config; this reproduces what the engine does
(project defaults, then the stack's values; structured values as JSON text) so the offline plan runs
the program on exactly what `pulumi up` would give it, except secrets, which cannot be decrypted here.
"""

from __future__ import annotations

import difflib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from preview.strict_yaml import load as load_strict_yaml
from serving.input_files import CONFIG_FILE_MAX_BYTES, InputFileError, read_text_file

# Shown in place of values that are secret (encrypted in the stack file, or declared secret).
SECRET_PLACEHOLDER = "offline-preview-fake-secret"  # noqa: S105 - a visible stand-in, never a credential
# Used where the stack file leaves gcp:project unset (a real `pulumi up` requires it).
PLACEHOLDER_PROJECT = "offline-placeholder-project"
# Example stacks (models, platforms and modes beyond the shipped three) live here, below the project folder.
EXAMPLES_DIR = "examples"


# What Pulumi reads at a stack file's top level (sdk/go/common/workspace/project.go, `ProjectStack`).
STACK_FILE_KEYS = frozenset({"config", "environment", "secretsprovider", "encryptedkey", "encryptionsalt"})


class StackFileError(ValueError):
    """The stack or project file is missing or not valid YAML/Pulumi config."""


# Names the project folder for every command when no --root is given (e.g. an MCP client's `env`).
ROOT_ENVIRONMENT_VARIABLE = "GEMMA_SERVING_ROOT"
# The checkout these modules are installed from (`pip install -e .` keeps them in place).
_INSTALLED_CHECKOUT = Path(__file__).resolve().parent.parent


def project_root(explicit: Path | None = None) -> Path:
    """The project folder (Pulumi.yaml and the stack files) every relative path is resolved against.

    Why not the current directory: the preview, gemma-verify and the MCP server are started from anywhere
    (a docs/ folder, an agent that passes no `cwd`), and a stack file looked up there is "not found" or,
    worse, another project's. Order: the flag, then GEMMA_SERVING_ROOT, then the checkout these modules
    were installed from. StackFileError (one line saying how to fix it) when that folder has no Pulumi.yaml.
    """
    environment = os.environ.get(ROOT_ENVIRONMENT_VARIABLE)
    if explicit is not None:
        root, source = explicit, "--root"
    elif environment:
        root, source = Path(environment), ROOT_ENVIRONMENT_VARIABLE
    else:
        root, source = _INSTALLED_CHECKOUT, "the installed checkout"
    root = root.expanduser().resolve()
    if not (root / "Pulumi.yaml").is_file():
        raise StackFileError(
            f"no Pulumi.yaml in {root} ({source}): pass --root <the gemma-serving project folder> "
            f"or set {ROOT_ENVIRONMENT_VARIABLE}"
        )
    return root


@dataclass
class StackConfig:
    project: str
    stack: str
    values: dict[str, str]
    secret_keys: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _load_yaml(path: Path) -> dict[str, Any]:
    if not path.exists():
        raise StackFileError(f"{path.name} not found in {path.parent}")
    try:
        data = load_strict_yaml(read_text_file(path, max_bytes=CONFIG_FILE_MAX_BYTES)) or {}
    except InputFileError as error:
        raise StackFileError(str(error)) from None
    except yaml.YAMLError as error:
        raise StackFileError(f"{path.name} is not valid YAML: {error}") from None
    if not isinstance(data, dict):
        raise StackFileError(f"{path.name} must be a YAML mapping")
    return data


def _as_config_string(value: Any) -> str:  # noqa: ANN401 - any YAML value
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    return json.dumps(value)


def stack_file_key_problem(name: str, document: dict[str, Any]) -> str | None:
    """A stack file's top level holds only what Pulumi reads there; `confg:` instead of `config:` would
    otherwise leave every setting unset and report each as missing, hiding the one real mistake."""
    unknown = sorted(str(key) for key in document if key not in STACK_FILE_KEYS)
    if not unknown:
        return None
    first = unknown[0]
    close = difflib.get_close_matches(first, sorted(STACK_FILE_KEYS), n=1, cutoff=0.6)
    hint = f" (did you mean {close[0]}?)" if close else ""
    return (
        f"{name}: unknown top-level key {first!r}{hint}; a stack file's top level holds "
        f"{', '.join(sorted(STACK_FILE_KEYS))}, and the settings go under config:"
    )


def _stack_name(path: Path) -> str:
    return path.name[len("Pulumi.") : -len(".yaml")]


def shipped_stacks(root: Path) -> list[str]:
    """The stacks a user deploys from the project folder as it is (`pulumi stack select <name>`)."""
    return sorted(_stack_name(path) for path in root.glob("Pulumi.*.yaml"))


def example_stacks(root: Path) -> list[str]:
    """Stacks kept in `examples/` so the root holds only what is deployed by default; each previews and is
    judged like a shipped one, and a user copies it beside Pulumi.yaml to deploy it."""
    return sorted(_stack_name(path) for path in (root / EXAMPLES_DIR).glob("Pulumi.*.yaml"))


def available_stacks(root: Path) -> list[str]:
    return sorted({*shipped_stacks(root), *example_stacks(root)})


def stack_file_path(root: Path, stack: str) -> Path:
    """Where `stack`'s file is: the project folder first, then `examples/`.

    A name in both would make `make preview STACK=<name>` show one file and `pulumi up` deploy the other,
    so it is refused.
    """
    shipped = root / f"Pulumi.{stack}.yaml"
    example = root / EXAMPLES_DIR / f"Pulumi.{stack}.yaml"
    # exists(), not is_file(): a FIFO or device by that name is refused by the reader, naming what it is.
    if shipped.exists() and example.exists():
        raise StackFileError(
            f"stack {stack!r} has two files, Pulumi.{stack}.yaml and {EXAMPLES_DIR}/Pulumi.{stack}.yaml; "
            "rename or remove one"
        )
    if example.exists():
        return example
    if not shipped.exists():
        known = ", ".join(available_stacks(root)) or "none"
        raise StackFileError(f"no stack file Pulumi.{stack}.yaml; stacks here: {known}")
    return shipped


def read_stack_config(root: Path, stack: str) -> StackConfig:
    """Merge project defaults and the stack's config into the engine's flat string map."""
    project_file = _load_yaml(root / "Pulumi.yaml")
    project = str(project_file.get("name", ""))
    if not project:
        raise StackFileError("Pulumi.yaml has no project name")
    stack_path = stack_file_path(root, stack)
    stack_file = _load_yaml(stack_path)
    unknown = stack_file_key_problem(stack_path.name, stack_file)
    if unknown:
        raise StackFileError(unknown)
    values: dict[str, str] = {}
    secret_keys: list[str] = []
    notes: list[str] = []
    for key, declaration in (project_file.get("config") or {}).items():
        full_key = key if ":" in key else f"{project}:{key}"
        if isinstance(declaration, dict) and "default" in declaration:
            values[full_key] = _as_config_string(declaration["default"])
    for key, value in (stack_file.get("config") or {}).items():
        full_key = key if ":" in key else f"{project}:{key}"
        if isinstance(value, dict) and set(value) == {"secure"}:
            values[full_key] = SECRET_PLACEHOLDER
            secret_keys.append(full_key)
            notes.append(f"{full_key} is encrypted in the stack file: the offline plan uses a fake stand-in")
            continue
        values[full_key] = _as_config_string(value)
    if not values.get("gcp:project"):
        values["gcp:project"] = PLACEHOLDER_PROJECT
        notes.append(
            f"gcp:project is not set in Pulumi.{stack}.yaml: the offline plan uses {PLACEHOLDER_PROJECT!r}; "
            "a real `pulumi up` needs `pulumi config set gcp:project <your-project-id>`"
        )
    return StackConfig(project=project, stack=stack, values=values, secret_keys=secret_keys, notes=notes)
