"""Watching a stack: metrics collection (collection.py, sidecar.py), its dashboard, alerts and budget (stack.py)."""

from __future__ import annotations
