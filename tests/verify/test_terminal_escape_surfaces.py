"""Every surface that prints remote text goes through the one escape (`verify.redact.escape_controls`).

Red team: raw terminal escapes reached the operator's terminal from TPU status (a node's placement record),
`metrics` labels, `query` answers and summaries, `memory` lines and `models` object names: `ESC[2J` cleared
the screen, OSC 52 wrote the clipboard, and a newline inside a name forged a line of the report. One test per
surface: the hostile text is shown as visible escapes, on the line the renderer put it on.
"""

from __future__ import annotations

import io
import json

from rich.console import Console

from remote.text import escape_controls
from verify.memory.cli import print_layout
from verify.memory.layout import MemoryLayout
from verify.memory.startup import StartupMemory
from verify.models.cli import print_inventory
from verify.models.inventory import BucketInventory, Checkpoint, CheckpointState
from verify.ops.answers import QueuedResource
from verify.ops.findings import Finding, Verdict
from verify.ops.preflight import PreflightReport
from verify.ops.render import print_preflight, print_status
from verify.ops.status import RolloutState, StatusReport, TpuStatus
from verify.ops.tpu_placement_status import PLACEMENT_METADATA_KEY, PlacementStatus, _attempts
from verify.query.cli import print_summary
from verify.query.run import QueryReport
from verify.terminal import cell

CLEAR = "\x1b[2J"
CLIPBOARD = "\x1b]52;c;ZXZpbA==\x07"
FORGED = "\nFAKE: all clear"


def clean(printed: str) -> None:
    """No raw control character but the renderer's own newlines; no forged line."""
    assert "\x1b" not in printed
    assert "\x07" not in printed
    assert "\nFAKE" not in printed


def test_the_one_escape_keeps_or_escapes_newlines_as_the_renderer_needs() -> None:
    assert escape_controls(f"a{CLEAR}\nb") == "a\\x1b[2J\nb"
    assert escape_controls(f"a{CLEAR}\nb\tc", keep_newlines=False) == "a\\x1b[2J\\x0ab\\x09c"
    assert escape_controls("\u2028\u202e", keep_newlines=False) == "\\u2028\\u202e"


def test_a_rich_cell_is_escaped_and_never_markup() -> None:
    """`Text(value)` kept ESC; a plain string in a table was parsed as markup (`[blink]`)."""
    assert cell(f"[blink]zone{CLEAR}").plain == "[blink]zone\\x1b[2J"


def test_tpu_status_placement_record_is_escaped(tmp_path: object) -> None:
    """The provider's placement record lives in node metadata anyone with setMetadata can write."""
    record = {
        "attempts": [
            {
                "zone": f"us-east5-a{CLEAR}",
                "provisioningModel": "spot",
                "outcome": "refused",
                "reason": f"quota{CLIPBOARD}{FORGED}",
            }
        ]
    }
    queued = QueuedResource.model_validate(
        {"name": "q", "tpu": {"nodeSpec": [{"node": {"metadata": {PLACEMENT_METADATA_KEY: json.dumps(record)}}}]}}
    )
    attempts = _attempts(queued)
    assert attempts
    placement = PlacementStatus(placement=2, of=2, zone="us-east1-d", provisioning="spot", attempts=attempts)
    report = StatusReport(
        stack="tpu",
        project="p",
        platform="tpu",
        state=RolloutState.IN_PROGRESS,
        summary=f"queued{FORGED}",
        tpu=TpuStatus(queued_resource="q", state="WAITING_FOR_RESOURCES", reason=f"r{CLEAR}", placement=placement),
    )
    out = io.StringIO()
    print_status(report, Console(file=out, width=400, force_terminal=False, color_system=None))
    printed = out.getvalue()
    clean(printed)
    assert "us-east5-a\\x1b[2J" in printed


def test_query_summary_escapes_the_served_name_and_failure() -> None:
    """The model name, finish reason and failure detail come from the server."""
    report = QueryReport(
        base_url="http://x",
        asked_model="m",
        served_model=f"m{CLEAR}{FORGED}",
        answer="",
        reasoning=None,
        finish_reason=f"stop{CLIPBOARD}",
        prompt_tokens=1,
        completion_tokens=1,
        reasoning_tokens=None,
        ttft_ms=1.0,
        e2e_ms=2.0,
        output_tokens_per_s=None,
        tokens_per_s_overall=None,
        failure="http_error",
        failure_detail=f"bad{FORGED}",
        status=500,
        cause="server",
    )
    out = io.StringIO()
    print_summary(report, out)
    clean(out.getvalue())
    assert "model m\\x1b[2J\\x0aFAKE" in out.getvalue()


def test_memory_lines_are_escaped() -> None:
    """vLLM's start-up lines are log text: anything in the container can write a look-alike."""
    layout = MemoryLayout(
        stack="l4",
        accelerator="nvidia-l4",
        checkpoint="c",
        source=f"rev{CLEAR}",
        first_line_at="t",
        measured=StartupMemory(weights_gib=1.0, lines=[f"Model loading took 1 GiB{CLIPBOARD}{FORGED}"]),
        rows=[],
        plan_note=None,
    )
    out = io.StringIO()
    print_layout(layout, out)
    clean(out.getvalue())
    assert "from rev\\x1b[2J" in out.getvalue()


def test_models_object_names_are_escaped() -> None:
    """A bucket's object names are anyone-with-write's text."""
    found = BucketInventory(
        bucket="b",
        checkpoints=[
            Checkpoint(
                path=f"gemma{CLEAR}{FORGED}",
                state=CheckpointState.PARTIAL,
                files=1,
                bytes=1,
                problems=[f"odd{CLIPBOARD}"],
            )
        ],
    )
    out = io.StringIO()
    print_inventory(found, out)
    clean(out.getvalue())
    assert "gemma\\x1b[2J\\x0aFAKE: all clear: partial" in out.getvalue()


def test_preflight_findings_are_escaped_cells() -> None:
    """Preflight details quote Google's answers (quota names, zones); a plain string was rich markup."""
    finding = Finding(area="quota", item=f"[blink]zone{CLEAR}", verdict=Verdict.INFO, detail=f"d{FORGED}")
    report = PreflightReport(
        stack="l4",
        project="p",
        platform="cloud-run",
        region="us-central1",
        zone=None,
        accelerator="nvidia-l4",
        findings=[finding],
    )
    out = io.StringIO()
    print_preflight(report, Console(file=out, width=400, force_terminal=False, color_system=None))
    clean(out.getvalue())
    assert "[blink]zone\\x1b[2J" in out.getvalue()
