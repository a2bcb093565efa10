"""The Kubernetes manifest tests run on one pytest-xdist worker (`--dist loadgroup`, as `make test` runs).

Why: each process builds a validator per kind once (manifests.py: kubernetes-validate's 1.5 MB definitions,
each CRD's schema checked against its meta-schema, some 0.6 s of CPU); on one worker that is paid once per
run, not once per worker.
"""

from __future__ import annotations

from pathlib import Path

import pytest


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in item.path.parents:
            item.add_marker(pytest.mark.xdist_group("kubernetes-validators"))
