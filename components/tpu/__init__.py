"""vLLM on a TPU node: the component (node.py), its queued resource, provider, REST client and startup script."""

from __future__ import annotations
