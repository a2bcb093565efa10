"""The text plan's extra sections, in the order a reviewer reads them: one list, one mechanism.

Why a list passed to `text_plan` rather than modules registering themselves: which sections a plan shows
is then visible in one place, and a test renders exactly what `python -m preview` renders.
"""

from __future__ import annotations

from preview.render import Section
from preview.supply_plan import supply_section
from preview.tpu_plan import tpu_section
from preview.watch_plan import watch_section


def standard_sections(*settings_sections: Section) -> list[Section]:
    """The capture-based sections (TPU request, before vLLM starts), then those computed from the settings."""
    return [tpu_section, supply_section, watch_section, *settings_sections]
