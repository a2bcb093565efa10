"""The write-up figures and the fit stored from them (serving/data/writeup-figures.json, latency-efficiency.json)."""

from __future__ import annotations

from benchmarks.writeup_figures import Params, errors_by_quantity, predict, render
from serving.speed_facts import fitted_efficiency
from serving.writeup_figures import Use, writeup_figures


def _stored_params() -> Params:
    fitted = fitted_efficiency()
    return Params(
        compute_gpu=fitted.compute_gpu,
        compute_tpu=fitted.compute_tpu,
        bandwidth=fitted.bandwidth,
        client_s=fitted.client_s,
        sweep_output_tokens=fitted.sweep_output_tokens,
    )


def test_the_stored_errors_are_what_the_stored_factors_give() -> None:
    """The errors advise states for its estimates must be the model's real errors: a change to the latency model
    or the figures that moves them fails here until `python -m benchmarks.writeup_figures --write` is rerun."""
    data, fitted = writeup_figures(), fitted_efficiency()
    params = _stored_params()
    for use, stored in ((Use.FIT, fitted.errors_fitted), (Use.HOLDOUT, fitted.errors_held_out)):
        figures = [f for f in data.figures if f.use is use and not f.flagged]
        assert errors_by_quantity(predict(data, f, params) for f in figures) == stored
    assert set(fitted.fitted_on) == {f.id for f in data.figures if f.use is Use.FIT}
    assert set(fitted.held_out) == {f.id for f in data.figures if f.use is Use.HOLDOUT}


def test_every_figure_is_printed_with_a_prediction_or_a_reason() -> None:
    """A figure silently dropped would hide a disagreement: each is printed, predicted or told why not."""
    data, params = writeup_figures(), _stored_params()
    predictions = [predict(data, figure, params) for figure in data.figures if figure.use is not Use.CHECK]
    for prediction in predictions:
        assert prediction.predicted is not None or prediction.note
    text = render(predictions, fitted_efficiency())
    for figure in data.figures:
        if figure.use is not Use.CHECK:
            assert figure.id in text


def test_figures_that_exceed_the_prefill_ceiling_are_not_counted() -> None:
    """The L4 at 16K tokens and 64 users (7.39 req/s) needs ~25x the L4's peak FLOP/s: prefix-cache hits. The
    model must say so rather than count a -99 % error (or fit to it)."""
    data = writeup_figures()
    figure = next(f for f in data.figures if f.id == "B-T2 no-MTP 16K/64")
    prediction = predict(data, figure, _stored_params())
    assert prediction.above_ceiling is not None
    assert prediction.above_ceiling > 10
    assert "prefix-cache" in prediction.note
