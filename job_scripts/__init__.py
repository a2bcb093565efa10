"""Scripts that run inside Cloud Run jobs, not Pulumi components: each is sent as `python3 -c <text>`.

Why apart from `components/`: a script here runs in the job's container (the pinned vLLM image, standard
library only at module level), never in the Pulumi program; the component that creates the job
(components/model_import.py) embeds its text. Tests import the scripts to run their pure decisions.
"""

from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent


def script_source(name: str = "import_weights") -> str:
    """A job script's text: the container runs it as `python3 -c <text>` (it needs no install step)."""
    return (HERE / f"{name}.py").read_text(encoding="utf-8")
