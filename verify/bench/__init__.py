"""`gemma-verify bench` / `compare`: sweeps a deployment can be judged by.

Why a package of small modules: each rule that makes a benchmark trustworthy (honest prompts, vLLM's
metric definitions, a client that is not the bottleneck, results that survive an interruption,
judgement against SLOs, prices and physics) lives in one place that can be tested on its own.
"""

from __future__ import annotations
