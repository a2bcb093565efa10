"""PromQL for one stack's vLLM metrics in Managed Service for Prometheus, built from a few helpers.

Why helpers rather than strings typed per panel: every query of a stack must carry the same selector
(the stack's own series only), divide without producing NaN series when idle, and compute SLO
attainment from a histogram bucket the same way; vLLM's own dashboard generator
(vllm tools/generate_grafana_dashboards.py, `Promql`, `divide`, `slo_attainment`) builds its queries
so, and these follow it. Where the metrics land: the Cloud Run sidecar writes `prometheus_target`
series with `namespace=<service name>` (GoogleCloudPlatform/run-gmp-sidecar, confgenerator's
generated config); the TPU node's collector sets `namespace=<node name>` the same way.
"""

from __future__ import annotations

from dataclasses import dataclass

# Rate window of every panel and alert: five scrapes of the collectors' 60 s interval (serving.collectors).
WINDOW = "5m"


def divide(numerator: str, denominator: str) -> str:
    """A ratio that drops series whose denominator is zero (no traffic: no value, rather than NaN)."""
    return f"{numerator} / ({denominator} > 0)"


def bucket_label(bound: float) -> str:
    """A histogram bound as vLLM writes `le` (prometheus_client's float format: 1.0, 0.1, 2.5)."""
    return repr(float(bound))


@dataclass(frozen=True)
class Promql:
    """Queries scoped to one stack's series by its label selector (e.g. `namespace="gemma-l4-vllm"`)."""

    selector: str
    window: str = WINDOW

    def sel(self, metric: str, *matchers: str) -> str:
        return f"{metric}{{{', '.join((self.selector, *matchers))}}}"

    def rate(self, metric: str, *matchers: str) -> str:
        return f"rate({self.sel(metric, *matchers)}[{self.window}])"

    def sum_rate(self, metric: str, *matchers: str, by: str = "") -> str:
        grouping = f" by ({by})" if by else ""
        return f"sum{grouping}({self.rate(metric, *matchers)})"

    def agg(self, op: str, metric: str, *matchers: str) -> str:
        return f"{op}({self.sel(metric, *matchers)})"

    def ratio(self, numerator: str, denominator: str) -> str:
        return divide(self.sum_rate(numerator), self.sum_rate(denominator))

    def quantile(self, q: float, histogram: str) -> str:
        return f"histogram_quantile({q}, sum by (le) ({self.rate(f'{histogram}_bucket')}))"

    def mean(self, histogram: str) -> str:
        return self.ratio(f"{histogram}_sum", f"{histogram}_count")

    def attainment(self, histogram: str, bound: float) -> str:
        """The share of observations at or below ``bound``, which must be one of the histogram's buckets."""
        within = self.sum_rate(f"{histogram}_bucket", f'le="{bucket_label(bound)}"')
        return divide(within, self.sum_rate(f"{histogram}_count"))

    def absent(self, metric: str, window: str) -> str:
        return f"absent_over_time({self.sel(metric)}[{window}])"
