"""`verify metrics`: vLLM's own ``/metrics`` read once (since the server started) or twice (a window).

- histograms.py: Prometheus histograms (TTFT, queue, ITL, end-to-end) to means and percentiles;
- reading.py: one read or a window of two, with the gauges, counters and spec-decode acceptance;
- cli.py: flags, the table, ``--json`` and the exit code.
"""

from __future__ import annotations
