"""`gemma-verify alerts ...`: alert thresholds for a stack, derived from what verify measured."""

from __future__ import annotations
