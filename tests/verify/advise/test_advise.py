"""`gemma-verify advise`: the ranked answer to "which deployment is cheapest for my workload and SLO"."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from preview.__main__ import main as preview_main
from serving.catalog import catalog_model
from serving.latency import model_cost, prefill_seconds
from serving.shapes import Accelerator
from serving.speed_facts import fitted_efficiency, hardware_for
from tests.conftest import ROOT, ensure_event_loop
from verify.advise.options import AdviseOptions, Slo, parse_lengths
from verify.advise.report import AdviseReport, render
from verify.advise.run import run_advise
from verify.advise.write import PLACEHOLDER_REVISION, write_stack
from verify.cli import main as verify_main

# One ranking across models (the per-model answer is tests/verify/advise/test_quality.py's).
QUESTION = AdviseOptions(prompt_tokens=8192, output_tokens=512, users=50, slo=Slo(p95_ttft_ms=2000), one_ranking=True)


@pytest.fixture(scope="module")
def answer() -> AdviseReport:
    return run_advise(QUESTION)


def test_the_issues_question_gets_ranked_candidates_across_models_and_shapes(answer: AdviseReport) -> None:
    """ "8k prompts, 512-token answers, 50 users, p95 TTFT under 2 s, cheapest per 1M tokens": at least three
    deployments, more than one model and shape, each priced per 1M tokens at that load with its basis."""
    report = answer
    assert report.exit_code == 0
    rows = report.rows
    assert len(rows) >= 3
    assert len({row.model for row in rows}) >= 2
    assert len({row.shape for row in rows}) >= 2
    assert [row.rank for row in rows] == list(range(1, len(rows) + 1))
    for group in (True, False):
        costs = [row.usd_per_month for row in rows if row.support_confirmed is group]
        assert costs == sorted(costs)
    for row in rows:
        assert row.p95_ttft_ms <= 2000
        assert row.usd_per_million_output is not None
        assert row.usd_per_million_input is not None
        assert row.latency_basis.kind == "estimated"
        assert "docs/advisor.md" in row.latency_basis.source
        assert row.latency_basis.error
        assert "pricing.json" in row.price_basis.source


def test_a_combination_no_source_shows_running_ranks_after_every_confirmed_one() -> None:
    """Guards against rank 1 being a guess: on main the question's cheapest row was the E2B FP8 on a TPU v6e,
    which no public source shows vllm-tpu loading. Unconfirmed rows come after every confirmed one, however
    cheap, marked in the table and explained in a note and the caveats."""
    report = run_advise(
        AdviseOptions(
            prompt_tokens=8192, output_tokens=512, users=50, slo=Slo(p95_ttft_ms=2000), top=200, one_ranking=True
        )
    )
    flags = [row.support_confirmed for row in report.rows]
    assert True in flags
    assert False in flags
    assert flags == sorted(flags, reverse=True)
    cheapest = min(report.rows, key=lambda row: row.usd_per_month)
    assert not cheapest.support_confirmed  # the guess is cheaper, and still not rank 1
    assert report.rows[0].support_confirmed
    unconfirmed = next(row for row in report.rows if not row.support_confirmed)
    assert any("unconfirmed" in caveat for caveat in unconfirmed.caveats)
    text = render(report)
    assert f"{unconfirmed.model} (?)" in text
    assert "support unconfirmed" in text


def test_each_kind_of_exclusion_is_one_line_with_examples(answer: AdviseReport) -> None:
    """A user asking "why not the 12B on an L4?" must find it, without a line per refused combination."""
    report = answer
    reasons = [exclusion.reason for exclusion in report.excluded]
    assert len(reasons) == len(set(reasons))
    assert "the variant does not run on the accelerator" in reasons
    assert any(reason.startswith("misses the SLO") for reason in reasons)
    text = render(report)
    assert "excluded:" in text
    assert text.count("\n  the variant does not run on the accelerator:") == 1


def test_an_slo_nothing_meets_exits_1_and_says_so() -> None:
    """A 1 ms TTFT cannot be met: no row, exit code 1, and every candidate counted under the SLO reason."""
    report = run_advise(QUESTION.model_copy(update={"slo": Slo(p95_ttft_ms=1)}))
    assert report.exit_code == 1
    assert not report.rows
    assert "no deployment meets the SLO" in render(report)


def test_a_budget_leaves_out_what_costs_more() -> None:
    """A budget is a constraint, not a ranking: rows over it are excluded and counted."""
    report = run_advise(QUESTION.model_copy(update={"budget_usd_per_month": 2500.0}))
    assert all(row.usd_per_month <= 2500 for row in report.rows)
    assert any("over the budget" in exclusion.reason for exclusion in report.excluded)


def test_constraints_narrow_the_field() -> None:
    """--platform cloud-run --model gemma-4-26b-a4b-it: only that model on Cloud Run GPUs."""
    options = QUESTION.model_copy(update={"platforms": ("cloud-run",), "models": ("gemma-4-26b-a4b-it",)})
    report = run_advise(options)
    assert report.rows
    assert {row.platform for row in report.rows} == {"cloud-run"}
    assert {row.model for row in report.rows} == {"gemma-4-26b-a4b-it"}


def test_scale_to_zero_prices_only_the_active_hours() -> None:
    """Cloud Run bills while it serves: 100 active hours cost 100/730 of an always-on month; a TPU node bills
    every hour it exists."""
    options = QUESTION.model_copy(update={"active_hours_per_month": 100.0, "top": 50})
    for row in run_advise(options).rows:
        hours = 100.0 if row.scales_to_zero else 730.0
        assert row.usd_per_month == pytest.approx(row.usd_per_hour * hours)


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--slo", "p99_ttft_ms=2000"], "p95_ttft_ms"),
        (["--slo", "p95_ttft_ms=fast"], "not a number"),
        (["--active-hours", "900"], "active_hours_per_month"),
    ],
)
def test_bad_flags_exit_2_naming_them(flags: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    """A typo in an SLO must not silently drop the SLO: exit 2 with the key and what is allowed."""
    code = verify_main(["advise", "--prompt-tokens", "8192", "--output-tokens", "512", "--users", "50", *flags])
    assert code == 2
    assert message in capsys.readouterr().err


def test_json_is_the_report(capsys: pytest.CaptureFixture[str]) -> None:
    """--json: one document a machine reads, the same rows as the table."""
    code = verify_main(
        [
            "advise",
            "--prompt-tokens",
            "8192",
            "--output-tokens",
            "512",
            "--users",
            "50",
            "--slo",
            "p95_ttft_ms=2000",
            "--json",
            "--top",
            "3",
        ]
    )
    document = json.loads(capsys.readouterr().out)
    assert code == 0
    assert len(document["rows"]) == 3
    assert document["rows"][0]["latency_basis"]["kind"] == "estimated"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project folder the preview runs in: the program and Pulumi.yaml, plus the shipped stacks (their pins)."""
    for name in ("Pulumi.yaml", "__main__.py", "Pulumi.l4.yaml", "Pulumi.tpu-v6e.yaml"):
        shutil.copy(ROOT / name, tmp_path / name)
    return tmp_path


def test_write_produces_a_stack_that_previews(answer: AdviseReport, project: Path) -> None:
    """`--write NAME`: the chosen row as Pulumi.NAME.yaml, which the real preview plans (exit 0)."""
    for row in answer.rows[:3]:
        name = f"advised-{row.rank}"
        path = write_stack(project, name, row)
        document = yaml.safe_load(path.read_text(encoding="utf-8"))["config"]
        assert document["gemma-serving:model"]["id"] == row.model
        assert document["gemma-serving:vllm"]["maxNumSeqs"] == row.batch_cap
        ensure_event_loop()
        # A placeholder revision (no stack or catalog pin) is refused by the preview until the user pins one.
        model = document["gemma-serving:model"]
        placeholder = PLACEHOLDER_REVISION in (model["revision"], model.get("drafterRevision"))
        code = preview_main(["--stack", name, "--root", str(project), "--format", "json"])
        assert code == (1 if placeholder else 0)


def test_every_ranked_row_writes_a_stack_that_previews_once_its_revision_is_pinned(
    answer: AdviseReport, project: Path
) -> None:
    """Done when: `--write NAME` produces a stack that previews. A row the project's own policy pack would refuse
    (an on-demand TPU VM: neither spot nor bounded) must never be ranked; with the commit pinned (`--revision`),
    each of the answer's first rows previews exit 0, policies included."""
    assert all(not (row.platform == "tpu" and row.provisioning == "on-demand") for row in answer.rows)
    for row in answer.rows[:5]:
        name = f"pinned-{row.rank}"
        # A row that drafts with MTP pins its drafter too (--drafter-revision).
        write_stack(
            project,
            name,
            row,
            revision="5e1f0c2d9a7b4e83c6d0f1a2b9e8c7d6a5f4e3b2",
            drafter_revision="6a7b8c9d0e1f2a3b4c5d6e7f8a9b0c1d2e3f4a5b",
        )
        ensure_event_loop()
        assert preview_main(["--stack", name, "--root", str(project), "--format", "json"]) == 0, row.shape


def test_write_pins_the_shipped_stacks_commit_or_says_placeholder(answer: AdviseReport, project: Path) -> None:
    """The revision is the one a shipped stack pins for that checkpoint; otherwise the all-zero placeholder the
    import job refuses, said so in the file, never a made-up commit."""
    row = answer.rows[0].model_copy(update={"model": "gemma-4-12b-it", "variant": "bf16"})
    text = write_stack(project, "pinned", row).read_text(encoding="utf-8")
    assert "707f0a3b8a3c7ad586ed01e27eafbad8a27dd0f7" in text
    assert "Pulumi.tpu-v6e.yaml pins" in text
    other = answer.rows[0].model_copy(update={"model": "gemma-4-e2b-it", "variant": "fp8"})
    text = write_stack(project, "unpinned", other).read_text(encoding="utf-8")
    assert PLACEHOLDER_REVISION in text
    assert "PLACEHOLDER" in text


def test_write_refuses_to_overwrite(answer: AdviseReport, project: Path) -> None:
    """An existing stack file is the user's: --write never replaces it without --force."""
    from verify import UsageError

    with pytest.raises(UsageError, match="exists"):
        write_stack(project, "l4", answer.rows[0])


def test_a_length_distribution_sizes_the_stack_for_its_longest_request_and_its_p95_prompt() -> None:
    """Traffic is rarely one length: with 10 % of prompts at 16K the p95 TTFT is a 16K prompt's, and the stack
    must hold 16K + 512 tokens, though throughput follows the mean."""
    lengths = parse_lengths("2048:256:0.9,16384:512:0.1")
    mixed = AdviseOptions.with_lengths(lengths, users=20, slo=Slo(p95_ttft_ms=60000), models=("gemma-4-12b-it",))
    assert (mixed.prompt_tokens, mixed.output_tokens) == (3482, 282)
    assert mixed.p95_prompt_tokens == 16384
    assert mixed.longest == (16384, 512)
    report = run_advise(mixed)
    assert report.rows
    for row in report.rows:
        assert row.max_model_len == 16384 + 512
        hardware = hardware_for(Accelerator(row.accelerator), row.tensor_parallel)
        cost = model_cost(catalog_model(row.model), row.variant, tensor_parallel=row.tensor_parallel)
        long_prefill = prefill_seconds(cost, hardware, fitted_efficiency().efficiency(hardware), 16384)
        assert row.p95_ttft_ms >= long_prefill * 1000, "the p95 request is a 16K prompt, however short the mean"
    assert "p95 prompt 16,384" in report.workload


def test_lengths_and_sizes_are_one_or_the_other(capsys: pytest.CaptureFixture[str]) -> None:
    """Two request sizes at once would make one of them silently ignored: exit 2 saying so."""
    code = verify_main(["advise", "--lengths", "2048:256:1", "--prompt-tokens", "8192", "--users", "5"])
    assert code == 2
    assert "--lengths replaces --prompt-tokens" in capsys.readouterr().err
    assert verify_main(["advise", "--lengths", "2048:256", "--users", "5"]) == 2
    assert "PROMPT:OUTPUT:SHARE" in capsys.readouterr().err
