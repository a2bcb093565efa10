"""Tests of the policy pack: each guardrail against crafted properties, and every stack's plan through all of them."""

from __future__ import annotations
