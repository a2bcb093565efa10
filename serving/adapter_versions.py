"""Adapter versions: the immutable folder each version imports into, the name it answers under, and the route
table that says which version a public name means.

A version is written once (job_scripts/import_weights.py refuses to put another source into a loadable
folder) and named `NAME@VERSION`, as Vertex AI names model versions (`model@001`); the folder has the same
name under `adapters/`, so vLLM's filesystem resolver, which joins a request's model to its folder, loads
exactly that version. Which version the public name serves is one small object in the model bucket, the
route table, written only by `gemma-verify adapters promote` after the version passed its gate, and read by
every replica (serving/adapter_routes_runtime.py). The stack file declares the version to import and gate;
the route table says what serves: Pulumi never writes the table, so no `pulumi up` moves traffic.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass

from serving.adapter_routes_runtime import SCHEMA, SEPARATOR, is_version_label, parse_table, split_versioned
from serving.lora import ADAPTERS_FOLDER

# The route table, at the bucket's root: outside `adapters/`, so the import identity (which may write only
# there) cannot move a pointer, and outside the model's own folder.
ROUTES_OBJECT = "adapter-routes.json"

__all__ = [
    "ROUTES_OBJECT",
    "SEPARATOR",
    "Route",
    "RouteTable",
    "default_version",
    "is_version_label",
    "split_versioned",
    "version_folder",
    "version_folder_problem",
    "versioned_name",
]


def versioned_name(name: str, version: str) -> str:
    """What a client (or `adapters check`) sends to reach one version: `support-bot@v4`."""
    return f"{name}{SEPARATOR}{version}"


def version_folder(name: str, version: str) -> str:
    """The version's folder in the bucket, relative to the model root: `adapters/support-bot@v4`."""
    return f"{ADAPTERS_FOLDER}/{versioned_name(name, version)}"


def version_folder_problem(path: str) -> str | None:
    """Why `path` is not one version's folder (`adapters/NAME@VERSION`), or None when it is."""
    folder, _, versioned = path.partition("/")
    if folder != ADAPTERS_FOLDER or split_versioned(versioned) is None:
        return f"{path!r} is not an adapter version's folder ({ADAPTERS_FOLDER}/NAME{SEPARATOR}VERSION)"
    return None


def default_version(source_uri: str, revision: str) -> str:
    """The version of an adapter whose stack entry names none: its commit's first 12 hex digits for a Hugging
    Face source, else `g` and 11 hex digits of the GCS path's hash. Either way a new source is a new version;
    a GCS path whose content changes keeps its version, and the import job refuses it (declare `version`)."""
    if revision:
        return revision[:12].lower()
    return "g" + hashlib.sha256(source_uri.encode()).hexdigest()[:11]


@dataclass(frozen=True)
class Route:
    """Which version a public name serves, and the one it replaced (where `promote --rollback` returns)."""

    version: str
    previous: str | None = None
    promoted_at: str = ""

    def to_json(self) -> dict[str, str]:
        entry = {"version": self.version, "promotedAt": self.promoted_at}
        return {**entry, "previous": self.previous} if self.previous else entry


@dataclass(frozen=True)
class RouteTable:
    """The whole table: public name -> route. `generation` is the object's, for a write that must not
    overwrite another promotion's (Cloud Storage's ifGenerationMatch; 0: the table does not exist yet)."""

    routes: Mapping[str, Route]
    generation: int = 0

    @classmethod
    def parse(cls, text: str | None, generation: int = 0) -> RouteTable:
        """The table as replicas read it (the same parser, so promote never writes what they would refuse)."""
        if text is None:
            return cls({}, generation)
        versions = parse_table(text)
        entries = json.loads(text)["adapters"]
        return cls(
            {
                name: Route(
                    version=version,
                    previous=str(entries[name]["previous"]) if entries[name].get("previous") else None,
                    promoted_at=str(entries[name].get("promotedAt") or ""),
                )
                for name, version in versions.items()
            },
            generation,
        )

    def with_route(self, name: str, route: Route) -> RouteTable:
        return RouteTable({**self.routes, name: route}, self.generation)

    def to_text(self) -> str:
        body = {name: route.to_json() for name, route in sorted(self.routes.items())}
        text = json.dumps({"schema": SCHEMA, "adapters": body}, indent=2, sort_keys=True) + "\n"
        parse_table(text)  # what replicas would refuse is never written
        return text
