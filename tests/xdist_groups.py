"""`--dist loadgroup` keeping each `xdist_group` on one worker again, under pytest 9.2.

Why: pytest-xdist 3.8 tells its scheduler a test's group by appending `@<group>` to the test's node id,
and it does so by setting `item._nodeid`; pytest 9.2 keeps node ids structured (`item._id`) and no longer
reads that attribute, so every group was silently ignored and `make test` spread each group's tests over
every worker: each worker parsed every module's syntax tree, imported pulumi_gcp's generated packages
for the provider oracle, and ran the shipped stacks' plans again (pytest-xdist issue #1386, fix proposed in
pull request #1388). This sets the id pytest 9.2 reads, the way xdist's own hook means to; where xdist
already did (an older pytest, or a fixed xdist), it does nothing.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from _pytest.nodeid import NodeId


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not getattr(config.option, "loadgroup", False):  # set on xdist's workers for `--dist loadgroup`
        return
    for item in items:
        names = {
            str(mark.args[0] if mark.args else mark.kwargs.get("name", "default"))
            for mark in item.iter_markers("xdist_group")
        }
        if names and "@" not in item.nodeid.rpartition("]")[2]:
            item._id = NodeId.parse(f"{item.nodeid}@{'_'.join(sorted(names))}")


def group_folder(items: list[pytest.Item], folder: Path, name: str) -> None:
    """Put every test under `folder` in the xdist group `name` (a folder's conftest calls it from its
    `pytest_collection_modifyitems`: a `pytestmark` in a conftest marks nothing)."""
    for item in items:
        if folder in item.path.parents:
            item.add_marker(pytest.mark.xdist_group(name))
