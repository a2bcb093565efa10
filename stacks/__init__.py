"""Typed stack settings: everything a stack file may say, validated once, before any resource exists."""

from __future__ import annotations
