"""What we know about serving Gemma with vLLM on Google Cloud, apart from any one stack's settings.

Accelerator facts, Google Cloud's naming rules, vLLM's flags, model profiles and the capacity planner
(how many sequences fit in accelerator memory) live here: the settings (`stacks`), the components and
`verify` all read them, and none of them is configuration.
"""

from __future__ import annotations
