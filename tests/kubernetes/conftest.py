"""The Kubernetes manifest tests run on one pytest-xdist worker (`--dist loadgroup`, as `make test` runs).

Why: each process builds a validator per kind once (manifests.py: kubernetes-validate's 1.5 MB definitions,
each CRD's schema checked against its meta-schema, some 0.6 s of CPU); on one worker that is paid once per
run, not once per worker.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.xdist_groups import group_folder


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    group_folder(items, Path(__file__).parent, "kubernetes-validators")
