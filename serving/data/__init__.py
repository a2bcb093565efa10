"""Recorded facts of the vLLM release the stacks target (read as package data; see SOURCE.md)."""

from __future__ import annotations
