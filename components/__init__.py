"""Reusable Pulumi components; each takes typed Args and never reads `pulumi.Config` itself."""

from __future__ import annotations
