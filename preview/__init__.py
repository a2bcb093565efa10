"""The offline plan: the real program under Pulumi's mocks, with a stack file's config, and no cloud."""

from __future__ import annotations
