"""Closed-loop users who think between requests: the rate they send and the engine's state at it.

Why: "10 developers" is not 10 requests always in flight. A user who reads the answer for ``Z`` seconds before the
next request sends one every ``Z + R`` seconds (``R`` the response time), so ``U`` users send ``X = U / (Z + R(X))``
requests/s, the fixed point found here by bisection (``R`` grows with ``X``). The engine's state at ``X`` is
serving/latency.py's for Poisson arrivals at that rate: burstier than a finite population, so it errs slow (safe
for an SLO).
"""

from __future__ import annotations

from serving.latency import AtLoad, Replica, Requests, at_rate, saturation_rate

STEPS = 16


def _response_s(state: AtLoad, requests: Requests) -> float:
    return state.ttft_mean_s + max(requests.output_tokens - 1, 0) * state.tpot_s


def with_think_time(replica: Replica, requests: Requests, users: float, think_s: float) -> AtLoad:
    """One replica's state under ``users`` closed-loop users who think ``think_s`` seconds between requests."""
    ceiling = saturation_rate(replica, requests)
    low, high = 0.0, min(users / think_s, ceiling)
    state = at_rate(replica, requests, high)
    if not state.saturated and high * (think_s + _response_s(state, requests)) <= users:
        return state  # the users cannot send more than this even with no wait
    for _ in range(STEPS):
        middle = (low + high) / 2
        state = at_rate(replica, requests, middle)
        if not state.saturated and middle * (think_s + _response_s(state, requests)) <= users:
            low = middle
        else:
            high = middle
    return at_rate(replica, requests, low) if low > 0 else state
