"""``--resume``: may this run add cells to that file? Only when it measures the same workload.

Why every setting: a cell is defined by its context and concurrency, but what its numbers mean depends
on everything else a request and its timing depend on: the server (endpoint and model), the API, the
output tokens and whether they are forced (``ignore_eos``), how many requests are measured and warmed
up, and the client transport. The resume key used to be (model, API, context, concurrency, max tokens)
only: resuming against a second server measured nothing and kept the first server's numbers under the
new run; ``--max-tokens 32`` on a 64-token file appended a second record of every cell. Now any
difference is refused before a request is sent, naming the flag and both values, so a file holds one
workload and one record per cell.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from verify.bench.results import CellRecord
from verify.bench.sweep import Endpoint, SweepPlan


@dataclass(frozen=True, slots=True)
class _Setting:
    flag: str
    field: str
    # What this run would record for a cell of that concurrency.
    expected: Callable[[SweepPlan, Endpoint, int], object]


_SETTINGS: tuple[_Setting, ...] = (
    _Setting("--url/--stack (endpoint)", "base_url", lambda plan, endpoint, users: endpoint.base_url),
    _Setting("--model", "model", lambda plan, endpoint, users: plan.model),
    _Setting("--api", "api", lambda plan, endpoint, users: plan.api.value),
    _Setting("--max-tokens", "max_tokens", lambda plan, endpoint, users: plan.max_tokens),
    _Setting("--ignore-eos/--no-ignore-eos", "ignore_eos", lambda plan, endpoint, users: plan.ignore_eos),
    _Setting("--requests", "num_prompts", lambda plan, endpoint, users: plan.requests_for(users)),
    _Setting("--warmup", "num_warmups", lambda plan, endpoint, users: plan.warmups_for(users)),
    _Setting("--transport", "transport", lambda plan, endpoint, users: endpoint.transport),
    _Setting("--arrival", "arrival", lambda plan, endpoint, users: plan.arrival.value if plan.rates else None),
    _Setting("--seed", "arrival_seed", lambda plan, endpoint, users: plan.seed if plan.rates else None),
)


def _shown(value: object) -> str:
    if value is None:
        return "not recorded (a file written before verify recorded it)"
    if isinstance(value, bool):
        return "on" if value else "off"
    return str(value)


def differences(records: Sequence[CellRecord], plan: SweepPlan, endpoint: Endpoint) -> list[str]:
    """One ``flag: the file's value(s), this run's value(s)`` per setting in which the file's cells differ
    from what this run would record; empty when the run may resume the file."""
    found = []
    for setting in _SETTINGS:
        theirs: set[str] = set()
        ours: set[str] = set()
        for record in records:
            expected = setting.expected(plan, endpoint, record.max_concurrency)
            recorded = getattr(record, setting.field)
            if recorded != expected:
                theirs.add(_shown(recorded))
                ours.add(_shown(expected))
        if theirs:
            found.append(f"{setting.flag}: the file {', '.join(sorted(theirs))}; this run {', '.join(sorted(ours))}")
    return found


def refusal(path: object, found: Sequence[str]) -> str:
    """The usage error for a resume whose settings differ from the file's."""
    return (
        f"--resume: {path} was measured with other settings, so this run would mix two workloads in one file: "
        + "; ".join(found)
        + ". Rerun with the file's settings, or measure into another --output."
    )
