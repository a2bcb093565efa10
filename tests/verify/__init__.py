"""Tests of the verify package (health checks against local vLLM-shaped servers)."""

from __future__ import annotations
