"""`verify memory`: vLLM's own start-up memory lines beside the planner's prediction, and calibration.

- startup.py: the lines' formats (vLLM 0.32) and what they say;
- layout.py: the lines read from Cloud Logging for a stack, beside the plan, with the error;
- cli.py: flags, the table, ``--json``, ``--save`` (a calibration record, stacks/calibration.py).
"""

from __future__ import annotations
