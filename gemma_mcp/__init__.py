"""An MCP server that offers this project to an agent: stacks, plans, fit, health, bench, compare.

Why a package of its own: the agent interface is a thin adapter over the programs a person runs
(`python -m preview`, `python -m verify`), so it must never grow logic of its own that the CLIs lack.
"""

from __future__ import annotations
