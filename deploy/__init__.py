"""Wire one stack's settings to the components it needs and return the stack outputs.

Why a package apart from `__main__.py`: the offline preview and the tests run exactly `deploy()` under
Pulumi's mocks, so what they check is what `pulumi up` deploys. `deploy()` decides the platform once,
by the settings' variant, and hands the stack to one module per platform (`deploy.cloud_run`,
`deploy.tpu`, `deploy.gke`); what every platform needs before vLLM starts has a module each (`deploy.apis`,
`deploy.images`, `deploy.weights`), and `deploy.outputs` checks the exports against the contract in
`serving.outputs`.
"""

from __future__ import annotations

from typing import assert_never

import pulumi

from deploy.context import StackContext
from deploy.outputs import ExportedOutputs
from serving.naming import stack_labels
from stacks.settings import CloudRunStack, GkeStack, StackSettings, TpuStack


def deploy(settings: StackSettings, stack: str) -> ExportedOutputs:
    """Create the stack's resources; returns the outputs `verify` reads (serving.outputs)."""
    if not settings.project:
        raise ValueError("gcp:project is not set: run `pulumi config set gcp:project <your-project-id>`")
    # Labels every resource carries, so costs and ownership can be traced back to the stack.
    labels = {**stack_labels(stack), **settings.labels}
    context = StackContext(stack=stack, project=settings.project, labels=labels)
    match settings:
        # Each platform's module is imported in its own arm: a plan loads only its platform's components
        # and provider SDK modules (a Cloud Run plan never imports the TPU provider or pulumi_kubernetes).
        case CloudRunStack():
            from deploy.cloud_run import deploy_cloud_run  # noqa: PLC0415 - per platform, see above

            return deploy_cloud_run(settings, context)
        case TpuStack():
            from deploy.tpu import deploy_tpu  # noqa: PLC0415 - per platform, see above

            return deploy_tpu(settings, context)
        case GkeStack():
            from deploy.gke import deploy_gke  # noqa: PLC0415 - per platform, see above

            return deploy_gke(settings, context)
        case _:  # pragma: no cover - the union has three variants
            assert_never(settings)


def export_all(outputs: ExportedOutputs) -> None:
    for key, value in outputs.items():
        pulumi.export(key, value)
