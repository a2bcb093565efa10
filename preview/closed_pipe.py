"""A command whose reader went away (`make preview | head`, `gemma-verify status --json | jq .revision`)
ends quietly, as `cat` does, instead of with a BrokenPipeError traceback.

Why here: the preview, the matrix and `gemma-verify` all print plans or reports that users pipe into
`head`, `less` or `jq`; `verify` already reads `preview.stack_file`, so this leaf module serves all three.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

# What a shell reports for a process ended by SIGPIPE (128 + 13): `set -o pipefail` sees the same as for `cat`.
EXIT_CLOSED_PIPE = 141


def run_until_reader_leaves(main: Callable[[], int]) -> int:
    """``main()``'s exit code, or ``EXIT_CLOSED_PIPE`` once stdout's reader has closed the pipe.

    stdout is pointed at /dev/null before returning, so the interpreter's final flush at exit cannot raise
    the same error again (Python's documented recipe for SIGPIPE, docs.python.org/3/library/signal.html).
    """
    try:
        code = main()
        sys.stdout.flush()
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_CLOSED_PIPE
    return code
