"""`verify query`: one free prompt to an endpoint, streamed, with the numbers a person asks about.

- run.py: the request (verify/streaming.py measures it) and the report, data first;
- cli.py: flags, where the prompt comes from, the live text and the summary, the exit code.
"""

from __future__ import annotations
