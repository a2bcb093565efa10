"""The stacks a workflow job runs for, as a JSON list, built from the stack files present (never a list typed
into the workflow, which a new stack file would silently miss).

    python3 .ci/stack_matrix.py deploy --event push --on-push "$DEPLOY_STACKS_ON_PUSH"
    python3 .ci/stack_matrix.py deploy --event workflow_dispatch --requested all
    python3 .ci/stack_matrix.py preview            # every stack file, examples/ included
    python3 .ci/stack_matrix.py deployable         # the stack files beside Pulumi.yaml

Deploys are opt-in: a push deploys exactly the stacks DEPLOY_STACKS_ON_PUSH lists (a JSON list; empty or
unset: none), each of which must have a stack file beside Pulumi.yaml; a manual run deploys the one named
(or `all` of them). Examples (examples/Pulumi.<name>.yaml) are previewed but never deployed: a user copies
one beside Pulumi.yaml first. Standard library only: it runs before any virtualenv exists.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = "examples"
# Stack names as the workflows pass them to make and Pulumi (and as a matrix value in a job name).
_NAME = re.compile(r"[a-z0-9][a-z0-9-]{0,62}")


class MatrixError(ValueError):
    """A stack asked for that has no stack file (or a name that is not a stack name)."""


def _stacks(folder: Path) -> list[str]:
    names = sorted(path.name.removeprefix("Pulumi.").removesuffix(".yaml") for path in folder.glob("Pulumi.*.yaml"))
    return [name for name in names if _NAME.fullmatch(name)]


def deployable(root: Path = ROOT) -> list[str]:
    """The stacks `pulumi up` deploys: the stack files beside Pulumi.yaml."""
    return _stacks(root)


def previewable(root: Path = ROOT) -> list[str]:
    """Every stack file, examples included (each previews and is judged like a shipped one)."""
    return sorted({*_stacks(root), *_stacks(root / EXAMPLES)})


def deploy_matrix(event: str, *, requested: str = "", on_push: str = "", root: Path = ROOT) -> list[str]:
    present = deployable(root)
    if event == "workflow_dispatch":
        wanted = present if requested.strip() in {"", "all"} else [requested.strip()]
    elif event == "push":
        try:
            listed = json.loads(on_push) if on_push.strip() else []
        except json.JSONDecodeError:
            raise MatrixError('DEPLOY_STACKS_ON_PUSH must be a JSON list of stack names, e.g. ["l4"]') from None
        if not isinstance(listed, list) or not all(isinstance(name, str) for name in listed):
            raise MatrixError('DEPLOY_STACKS_ON_PUSH must be a JSON list of stack names, e.g. ["l4"]')
        wanted = listed
    else:
        raise MatrixError(f"deploys run on push or workflow_dispatch, not {event!r}")
    unknown = [name for name in wanted if name not in present]
    if unknown:
        raise MatrixError(
            f"no stack file beside Pulumi.yaml for {', '.join(map(repr, unknown))}; stacks here: "
            f"{', '.join(present) or 'none'} (examples/ are previewed, never deployed)"
        )
    return sorted(set(wanted))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="stack_matrix.py", description=__doc__)
    parser.add_argument("kind", choices=["deploy", "preview", "deployable"])
    parser.add_argument("--event", default="")
    parser.add_argument("--requested", default="")
    parser.add_argument("--on-push", default="")
    args = parser.parse_args(argv)
    try:
        match args.kind:
            case "deploy":
                stacks = deploy_matrix(args.event, requested=args.requested, on_push=args.on_push)
            case "preview":
                stacks = previewable()
            case _:
                stacks = deployable()
    except MatrixError as error:
        print(f"stack_matrix.py: error: {error}", file=sys.stderr)
        return 2
    print(json.dumps(stacks))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
