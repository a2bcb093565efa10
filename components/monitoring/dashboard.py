"""A stack's panel list (serving.dashboard_panels) as a Cloud Monitoring dashboard's JSON.

Why generated: the JSON follows Google's Dashboard message (google.monitoring.dashboard.v1.Dashboard:
mosaicLayout tiles of xyChart widgets whose data sets are `prometheusQuery` or `timeSeriesFilter`
queries); the tests parse each stack's JSON into that message with Google's own client library, so a
misspelt field fails the suite rather than the `pulumi up` that creates the dashboard.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, assert_never

from serving.dashboard_panels import Panel, PlatformPanel, PromPanel, Section

COLUMNS = 48
HALF = COLUMNS // 2
CHART_HEIGHT = 16
HEADER_HEIGHT = 4
ALIGNMENT = "60s"


def dashboard_json(
    *, display_name: str, intro: str, sections: Sequence[Section], labels: Mapping[str, str] | None = None
) -> str:
    """The dashboard as Cloud Monitoring's API takes it: a text tile, then each section's charts two by two."""
    tiles: list[dict[str, Any]] = []
    y = 0
    tiles.append(
        _tile(0, y, COLUMNS, HEADER_HEIGHT, {"title": display_name, "text": {"content": intro, "format": "MARKDOWN"}})
    )
    y += HEADER_HEIGHT
    for section in sections:
        tiles.append(
            _tile(0, y, COLUMNS, HEADER_HEIGHT, {"title": section.title, "sectionHeader": {"dividerBelow": True}})
        )
        y += HEADER_HEIGHT
        for index, panel in enumerate(section.panels):
            x = 0 if index % 2 == 0 else HALF
            tiles.append(_tile(x, y, HALF, CHART_HEIGHT, _chart(panel)))
            if index % 2 == 1 or index == len(section.panels) - 1:
                y += CHART_HEIGHT
    body: dict[str, Any] = {
        "displayName": display_name,
        "mosaicLayout": {"columns": COLUMNS, "tiles": tiles},
        "labels": dict(labels or {}),
    }
    return json.dumps(body, indent=1, sort_keys=True)


def _tile(x: int, y: int, width: int, height: int, widget: dict[str, Any]) -> dict[str, Any]:
    return {"xPos": x, "yPos": y, "width": width, "height": height, "widget": widget}


def _chart(panel: Panel) -> dict[str, Any]:
    match panel:
        case PromPanel():
            data_sets = [
                {
                    "plotType": "LINE",
                    "targetAxis": "Y1",
                    "legendTemplate": series.legend,
                    "minAlignmentPeriod": ALIGNMENT,
                    "timeSeriesQuery": {"prometheusQuery": series.promql, "unitOverride": panel.unit},
                }
                for series in panel.series
            ]
        case PlatformPanel():
            data_sets = [
                {
                    "plotType": "LINE",
                    "targetAxis": "Y1",
                    "minAlignmentPeriod": ALIGNMENT,
                    "timeSeriesQuery": {
                        "timeSeriesFilter": {
                            "filter": panel.filter,
                            "aggregation": {
                                "alignmentPeriod": ALIGNMENT,
                                "perSeriesAligner": panel.aligner,
                                "crossSeriesReducer": panel.reducer,
                                "groupByFields": list(panel.group_by),
                            },
                        },
                        "unitOverride": panel.unit,
                    },
                }
            ]
        case _:  # pragma: no cover - the union has two variants
            assert_never(panel)
    return {"title": panel.title, "xyChart": {"dataSets": data_sets, "chartOptions": {"mode": "COLOR"}}}
