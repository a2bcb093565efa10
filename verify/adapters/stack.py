"""What the `adapters` commands take from a stack: its declared adapter versions, the route table's address,
and where each version's files are (the model bucket), with the served model's shapes from the catalog.

Read once per command: the stack file (preview.stack_file, as the program reads it) and the stack's outputs
(`adapterRoutes`, `modelBucket`, through the Pulumi gateway). A `--url` target has neither: promote then
needs `--routes` and `--version`, and the tensor check looks for the files beside a local server.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from remote.google_client import GoogleApis
from serving.adapter_versions import split_versioned, version_folder
from serving.lora_shapes import LayerShapes, layer_shapes
from stacks.catalog_checks import Served, served_checkpoint
from stacks.settings import StackSettings
from verify import UsageError
from verify.adapters.run import DeclaredAdapter, Probe, TensorLocator, TensorPlace
from verify.adapters.tensors import BucketFiles
from verify.stack_settings import load_settings


@dataclass(frozen=True)
class DeclaredVersion:
    """One adapter as the stack file declares it: the version to import and gate, its probes and rank."""

    name: str
    version: str
    rank: int
    probes: tuple[Probe, ...]

    @property
    def declared(self) -> DeclaredAdapter:
        return DeclaredAdapter(name=self.name, probes=self.probes)


def declared_versions(settings: StackSettings) -> dict[str, DeclaredVersion]:
    return {
        adapter.name: DeclaredVersion(
            name=adapter.name,
            version=adapter.version_label,
            rank=adapter.rank,
            probes=tuple(Probe(prompt=p.prompt, expect=p.expect) for p in adapter.probes),
        )
        for adapter in settings.adapters
    }


def stack_settings(stack: str, root: Path | None = None) -> StackSettings:
    return load_settings(stack, root)


def model_shapes(settings: StackSettings) -> tuple[LayerShapes | None, str | None]:
    """The served catalog model's adaptable modules per layer (None for a checkpoint outside the catalog)."""
    served = served_checkpoint(settings.model)
    if isinstance(served, Served):
        return layer_shapes(served.model.text_config), f"the catalog's {served.model.id}"
    return None, None


@dataclass(frozen=True)
class BucketTensors:
    """Each version's folder in the stack's model bucket (adapters/NAME@VERSION), and the catalog's shapes."""

    apis: GoogleApis
    bucket: str
    shapes: LayerShapes | None
    shapes_from: str | None

    def locate(self, served_as: str, adapter_root: str | None, base_root: str | None) -> TensorPlace | None:
        del adapter_root, base_root
        parts = split_versioned(served_as)
        if parts is None:
            return None
        files = BucketFiles(self.apis, self.bucket, version_folder(*parts))
        return TensorPlace(files, self.shapes, self.shapes_from)


def bucket_tensors(apis: GoogleApis, bucket: str | None, settings: StackSettings) -> TensorLocator:
    if not bucket:
        raise UsageError("the stack exports no modelBucket: its adapters' files cannot be read")
    shapes, source = model_shapes(settings)
    return BucketTensors(apis, bucket, shapes, source)
