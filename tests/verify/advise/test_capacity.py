"""Where preflight knows a zone and tier cannot be granted, advise's row there says so (no Google call of its own)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.verify.ops.conftest import fake  # noqa: F401 - the ops tests' fake Google, as a fixture here
from tests.verify.ops.google_fake import FakeGoogle
from tests.verify.ops.scenarios import Project
from tests.verify.ops.test_tpu_availability import FALLBACK, PREEMPTIBLE, preflight
from verify.cli import main

# flex-start v6e rows for one user at 512 + 256 tokens: advise's first zone for flex-start is us-east5-a.
ADVISE = ["advise", "--prompt-tokens", "512", "--output-tokens", "256", "--users", "1", "--platform", "tpu"]
ADVISE += ["--provisioning", "flex-start", "--active-hours", "4", "--json", "--top", "50"]


def _advise(argv: list[str], capsys: pytest.CaptureFixture[str]) -> list[dict[str, object]]:
    assert main(argv) == 0
    rows: list[dict[str, object]] = json.loads(capsys.readouterr().out)["rows"]
    return rows


def test_a_row_in_a_zone_preflight_cannot_grant_says_so(
    fake: FakeGoogle,  # noqa: F811 - the fixture imported above
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """advise ranked a flex-start v6e-1 in us-east5-a first while preflight had just found every preemptible chip
    of that zone in use: the user deployed into a zone that could not grant it. With the saved preflight answer
    (`--capacity`), that row says it cannot be granted, naming the file; rows the answer does not cover do not."""
    report = preflight(fake, FALLBACK, Project(usage={(PREEMPTIBLE, "us-east5-a"): 8}))
    saved = tmp_path / "preflight.json"
    saved.write_text(report.model_dump_json(), encoding="utf-8")
    before = _advise(ADVISE, capsys)
    rows = _advise([*ADVISE, "--capacity", str(saved)], capsys)
    assert [r["shape"] for r in rows] == [r["shape"] for r in before], "the answer marks rows, it does not rank"
    marked = [r for r in rows if any("no capacity known" in str(c) for c in r["caveats"])]  # type: ignore[attr-defined]
    assert marked
    assert all((r["shape"], r["zone"], r["provisioning"]) == ("v6e-1", "us-east5-a", "flex-start") for r in marked)
    assert str(saved) in str(marked[0]["caveats"])
    assert any(r["shape"] != "v6e-1" for r in rows), "a slice preflight did not ask about is left unmarked"
    assert not any("no capacity known" in str(r["caveats"]) for r in rows if r["shape"] != "v6e-1")


def test_an_unreadable_capacity_file_is_a_usage_error_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A truncated or wrong file passed as the capacity answer must not be silently ignored (every row would look
    grantable): it is a usage error naming the file."""
    broken = tmp_path / "broken.json"
    broken.write_text('{"stack": "x"', encoding="utf-8")
    assert main([*ADVISE, "--capacity", str(broken)]) == 2
    assert str(broken) in capsys.readouterr().err
