"""verify: everything that reads a stack, before and after it is deployed (`gemma-verify ...`).

Checks and benchmarks of any vLLM OpenAI-compatible endpoint (health, bench, compare, memory), the
Google-side reads around `pulumi up` (preflight, status, logs), and the advisor. The package never imports
the Pulumi program (deploy/, components/): it reads stack files through the settings, what a stack exported
(or a URL the user gives), and talks HTTP, so the same checks run against Cloud Run, a TPU VM, a GKE fleet
or a local server.
"""

from __future__ import annotations


class UsageError(Exception):
    """The user asked for something that cannot be done as asked; the CLI exits with code 2.

    Why one shared type: bad flags, a missing ``pulumi`` binary, an unset API-key variable and a
    credential that cannot be obtained all mean "fix your invocation, not the server", and every
    subcommand (health, bench, compare) must report them the same way. Messages name the flag, the
    variable or the command involved and never contain a secret.
    """
