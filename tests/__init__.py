"""The project's tests (pytest); conftest.py installs recording Pulumi mocks for every test."""

from __future__ import annotations
