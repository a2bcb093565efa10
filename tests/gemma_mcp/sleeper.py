"""A stand-in for a `verify bench` with worker processes, for the runner's tests.

It starts one child in its own process group (as multiprocessing starts bench workers) and sleeps. The
child, once its signal handling is set up, writes "<parent pid> <child pid>" to the file named by the
first argument. With `--stubborn` the child ignores SIGINT (a worker that does not stop when asked), so
only SIGKILL of the group ends it.
"""

from __future__ import annotations

import subprocess
import sys
import time

CHILD = """
import os, signal, sys, time
if {stubborn}:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
with open(sys.argv[1], "w", encoding="utf-8") as out:
    out.write(f"{{os.getppid()}} {{os.getpid()}}")
time.sleep(60)
"""


def main() -> None:
    stubborn = "--stubborn" in sys.argv
    subprocess.Popen([sys.executable, "-c", CHILD.format(stubborn=stubborn), sys.argv[1]])
    time.sleep(60)


if __name__ == "__main__":
    main()
