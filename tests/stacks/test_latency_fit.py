"""The latency fit and the estimate it feeds (stacks/latency_fit.py, stacks/estimate.py): clients and stated peaks."""

from __future__ import annotations

import dataclasses
import math

from serving.catalog import catalog_model
from serving.writeup_figures import writeup_figures
from stacks.estimate import basis_of, replica_of
from stacks.latency_fit import Params, Target, measure_clients, predict, typical_for_unmeasured


def _target(client: str, offset: float, *, depends: bool = True) -> Target:
    def value(params: Params) -> float:
        return offset + (params.client(client) if depends else 0.0)

    return Target(
        id=client, quantity="latency_s", value=offset + 0.3, error=0.1, family="gpu", client=client, predict=value
    )


def test_a_client_no_figure_measures_gets_the_typical_time_not_the_start_value() -> None:
    """Left out of write-up A, the v6e-1 deployment's client was seen only at 256 users, where a closed loop's
    rate ignores the client: it kept the fit's 0.1 s start and predicted A's v6e-1 latencies 30-60 % low. A
    client no figure measures takes the median of the measured ones."""
    targets = [_target("A", 0.2), _target("B", 0.1), _target("quoted TPU", 1.0, depends=False)]
    params = dataclasses.replace(Params.start(), clients=(("A", 0.2), ("B", 0.4), ("quoted TPU", 0.1)))
    found = typical_for_unmeasured(targets, params)
    assert math.isclose(found.client("quoted TPU"), 0.3)
    assert (found.client("A"), found.client("B")) == (0.2, 0.4)


def test_a_left_out_write_up_keeps_the_client_time_its_own_single_request_measured() -> None:
    """A write-up left out of the fit is a new client: its sweep latencies were predicted with the others'
    typical client (B's 0.15 s client at 0.22 s: +40-75 % on its four latencies). Its single request (B-14,
    TTFT 0.215 s) measures that time; the left-out prediction of B-14 itself is then exact, by construction."""
    data = writeup_figures()
    b14 = next(f for f in data.figures if f.id == "B-14")
    without_b = dataclasses.replace(Params.start(), clients=(("A", 0.14), ("C", 0.22)))
    measured = measure_clients(data, "B", without_b)
    predicted = predict(data, b14, measured).predicted
    assert predicted is not None
    assert math.isclose(predicted, b14.value or 0.0, rel_tol=1e-3)
    assert 0.0 < measured.client("B") < float(b14.value or 0.0)
    assert measured.client("A") == 0.14, "another write-up's client is not touched"


def test_an_estimates_basis_states_each_chips_own_peaks() -> None:
    """The basis of a v6e-4 row said '230 TFLOP/s bf16 and 410 GB/s a chip': the per-chip peaks divided by the
    chips once more. A reviewer checking the estimate must read the datasheet's 918 TFLOP/s and 1,640 GB/s."""
    replica = replica_of(catalog_model("gemma-4-12b-it"), "bf16", "tpu-v6e", 4, batch_cap=8)
    assert "4 x TPU v6e (Trillium): 918 TFLOP/s bf16 and 1,640 GB/s a chip" in basis_of(replica)
