"""The write-up figures and the fit stored from them (serving/data/writeup-figures.json, latency-efficiency.json)."""

from __future__ import annotations

import pytest

from benchmarks.writeup_figures import render
from serving.speed_facts import fitted_efficiency
from serving.writeup_figures import Use, writeup_figures
from stacks.latency_fit import (
    PREDICTED,
    SWEEP_OUTPUT_BOUNDS,
    LeaveOneOut,
    Params,
    errors_by,
    predict,
)


@pytest.fixture(scope="module")
def predictions() -> list:  # type: ignore[type-arg]
    data, params = writeup_figures(), Params.of(fitted_efficiency())
    return [predict(data, figure, params) for figure in data.figures]


def test_the_stored_errors_are_what_the_stored_factors_give(predictions: list) -> None:  # type: ignore[type-arg]
    """The errors advise states for its estimates must be the model's real errors: a change to the latency model
    or the figures that moves them fails here until `python -m benchmarks.writeup_figures --write` is rerun."""
    fitted = fitted_efficiency()
    assert errors_by(predictions, lambda p: p.figure.quantity) == fitted.errors
    in_sample = {e.quantity for e in fitted.errors}
    assert in_sample == {e.quantity for e in fitted.errors_leave_one_out}, "every quantity has a left-out error"
    assert {(e.family, e.kind) for e in fitted.errors_by_kind} >= {("gpu", "short prompts"), ("tpu", "long prompts")}


def test_every_figure_with_a_workload_is_predicted_or_says_why(predictions: list) -> None:  # type: ignore[type-arg]
    """A figure silently dropped would hide a disagreement: each is printed, and every one with a workload and a
    catalog variant has a prediction (flagged ones too: they are shown, only kept out of the errors)."""
    data = writeup_figures()
    for prediction in predictions:
        figure = prediction.figure
        assert prediction.predicted is not None or prediction.note
        workload = figure.workload
        has_workload = workload.users is not None and workload.prompt_tokens is not None
        if figure.use is Use.CHECK and has_workload and figure.quantity in PREDICTED:
            assert data.setup_of(figure).variant is not None
            assert prediction.predicted is not None or "planner refuses" in prediction.note, figure.id
    text = render(data, predictions, fitted_efficiency(), LeaveOneOut({}, []))
    for figure in data.figures:
        assert figure.id in text


def test_figures_above_the_cold_ceiling_are_explained_by_their_resent_prompts(predictions: list) -> None:  # type: ignore[type-arg]
    """The L4 at 16K tokens and 64 users (7.39 req/s) needs ~25x the L4's peak FLOP/s cold: B's sweep resent its
    prompts, the prefix cache served all but the last hit block, and the host's tokenising bounds the rate. It is
    predicted and counted now, not left out for being above the cold ceiling."""
    found = next(p for p in predictions if p.figure.id == "B-T2 no-MTP 16K/64")
    assert found.counted
    assert "prompt tokens cached" in found.note
    assert found.error is not None
    assert abs(found.error) < found.figure.error


def test_every_setup_states_its_reuse_host_and_client_with_the_sentence_behind_it() -> None:
    """Reuse, the host's vCPUs and the client are facts of each write-up's setup, not fitted: each carries the
    sentence that supports it, so a reviewer can check it against the write-up."""
    for name, setup in writeup_figures().setups.items():
        assert setup.sweep_reuse.why, name
        assert setup.host.why, name
        assert setup.client.why, name
        if setup.mtp_tokens:
            assert setup.mtp_counters is not None, f"{name}: MTP without the counters that give its acceptance"


def test_the_sweep_output_length_is_a_bounded_printed_nuisance() -> None:
    """The sweeps never stated their output length: it is fitted, within what B's counters allow (at most 5.3
    tokens a request), and printed, never used to advise."""
    fitted = fitted_efficiency()
    low, high = SWEEP_OUTPUT_BOUNDS
    assert low <= fitted.sweep_output_tokens <= high <= 9494 / (29_389_524 / 16_384)
    assert tuple(fitted.sweep_output_bounds) == SWEEP_OUTPUT_BOUNDS


def test_each_family_is_fitted_on_its_own_figures() -> None:
    """A GPU's efficiencies must come from GPU figures and a TPU's from TPU figures: the previous fit lent one TPU
    cell's compute efficiency to every GPU."""
    fitted = fitted_efficiency()
    assert set(fitted.families) == {"gpu", "tpu"}
    for factors in fitted.families.values():
        assert 0 < factors.compute <= 1
        assert 0 < factors.bandwidth <= 1
