"""`python -m preview --stack l4 [--format json]`: the offline plan of one stack (the command: preview/cli.py)."""

from __future__ import annotations

import gc
import sys

if __name__ == "__main__":
    # One short run whose objects (modules, classes, the captured plan) live until it exits: the cyclic
    # collector's ~220 passes reclaim ~9,000 objects (~1.5 MB) for ~4 % of the plan's CPU, half of it while
    # the imports below run. So it is off before them.
    gc.disable()

# Imported once the collector is off (above).
from preview.cli import main
from preview.closed_pipe import run_until_reader_leaves

__all__ = ["main"]

if __name__ == "__main__":
    sys.exit(run_until_reader_leaves(main))
