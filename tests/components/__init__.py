"""Tests of the components, under recording Pulumi mocks (and fakes of the TPU API and the import job's stores)."""

from __future__ import annotations
