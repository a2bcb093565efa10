"""What a stack's route guard admits: the `model` names its server answers (serving/route_guard.py says how
the guard is installed; serving/guard_runtime.py what it refuses).

Why one function: the guard refuses every `model` that is not a name of this server before vLLM resolves it,
so every feature that adds a name clients may call (an adapter, a staging name, a version) adds it here, and
the launch line (and so the plan and the serving revision) shows it.
"""

from __future__ import annotations

from collections.abc import Iterable

from stacks.adapters import AdapterSettings


def answered_names(served_name: str, adapters: Iterable[AdapterSettings]) -> tuple[str, ...]:
    """The `model` names the server answers: its served name first, then each declared adapter's."""
    return tuple(dict.fromkeys([served_name, *(adapter.name for adapter in adapters)]))
