"""The Cloud Run service and job builders: pulumi-gcp's own input types for mypy, the same wire form for the plan.

Why: with `**inputs: Any` a misspelt probe key (`initial_delay_secconds`) or a port written as a string
passed mypy and the offline plan and reached the provider. The builders take the keyword arguments of
pulumi-gcp's generated `*ArgsDict` (a type-only import), so `make lint` refuses such a key; these tests hold
the two halves of that promise: the types named are pulumi-gcp's real ones, and what a builder returns is
exactly what `wire` returned before (so no stack's plan moves).
"""

from __future__ import annotations

import inspect
import re

import pulumi_gcp.cloudrunv2._inputs as generated

from components.wire import cloud_run, cloud_run_job, wire

# Every public function of the two builder modules (a builder added later is checked without a list to extend).
BUILDERS = [
    function
    for module in (cloud_run, cloud_run_job)
    for name, function in inspect.getmembers(module, inspect.isfunction)
    if function.__module__ == module.__name__ and not name.startswith("_")
]


def test_each_builder_takes_a_generated_args_dict() -> None:
    """A builder typed with a name pulumi-gcp does not define would check nothing (mypy reads it as Any)."""
    assert len(BUILDERS) > 20, [builder.__name__ for builder in BUILDERS]
    for builder in BUILDERS:
        annotation = str(inspect.signature(builder).parameters["fields"].annotation)
        match = re.fullmatch(r"Unpack\[(?:cloudrunv2\.)?(\w+)\]", annotation)
        assert match, (builder.__name__, annotation)
        assert match.group(1).endswith("ArgsDict")
        assert isinstance(getattr(generated, match.group(1)), type), match.group(1)


def test_a_builder_returns_what_wire_returned() -> None:
    """The typed builders change no plan: camelCase keys, None fields left out, nested blocks as given."""
    probe = cloud_run.startup_probe(
        http_get=cloud_run.startup_http_get(path="/health", port=8000),
        initial_delay_seconds=0,
        period_seconds=10,
        timeout_seconds=None,
    )
    assert probe == wire(
        http_get=wire(path="/health", port=8000), initial_delay_seconds=0, period_seconds=10, timeout_seconds=None
    )
    assert probe == {"httpGet": {"path": "/health", "port": 8000}, "initialDelaySeconds": 0, "periodSeconds": 10}
    assert cloud_run.container(image="vllm/vllm-openai:v0.32.0", commands=None) == {"image": "vllm/vllm-openai:v0.32.0"}

    assert cloud_run_job.task_template(max_retries=0, timeout=None) == {"maxRetries": 0}
