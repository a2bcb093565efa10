"""Operate a stack: `preflight` before `pulumi up`, `status` and `logs` after (read-only Google API calls).

Modules: `stack` (the one adapter onto the stack settings), `google` (REST client, credentials, errors),
`preflight`, `status`, `logs` with `signatures`, `findings` (the verdict shape), `render`, `cli`.
"""

from __future__ import annotations
