"""Tests of the stacks package that need no Pulumi (capacity planner, model profiles)."""

from __future__ import annotations
