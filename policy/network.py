"""No firewall rule opens the vLLM port to the whole internet.

Why: the hand-made TPU deployment served vLLM on its external IP, port 8000, to 0.0.0.0/0. vLLM's
`--api-key` guards `/v1/*` only (metrics, health, tokenizer and the rest stay open) and a scanner finds
an open port in hours. Keep the endpoint internal or allow named source ranges only.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from policy.guardrail import Guardrail
from policy.props import field, mappings, number, strings
from policy.source_ranges import allowed_text, describe, too_wide

FIREWALL = "gcp:compute/firewall:Firewall"
# vLLM's default `--port`, which the stacks serve on unless they set another. Written here, not imported
# from serving/container.py, because the pack imports nothing of the project (docs/architecture.md);
# tests/serving/test_container.py checks the two agree. Configurable for packs that serve elsewhere.
DEFAULT_VLLM_PORT = 8000
DEFAULT_VLLM_PORTS = (DEFAULT_VLLM_PORT,)
# Protocols whose rules can carry HTTP to vLLM: TCP by name or IANA number, and "all".
_TCP_PROTOCOLS = frozenset({"tcp", "6", "all"})

CONFIG_SCHEMA: Mapping[str, Any] = {
    "vllmPorts": {
        "type": "array",
        "items": {"type": "integer", "minimum": 1, "maximum": 65535},
        "default": list(DEFAULT_VLLM_PORTS),
        "description": "Ports a vLLM server listens on; none may be opened to the public internet.",
    }
}


def _port_range_includes(entry: str, port: int) -> bool:
    low, dash, high = entry.strip().partition("-")
    try:
        return int(low) <= port <= int(high if dash else low)
    except ValueError:
        return False


def _opened_ports(allow: Mapping[str, Any], ports: tuple[int, ...]) -> list[int]:
    protocol = str(field(allow, "protocol") or "").strip().lower()
    if protocol not in _TCP_PROTOCOLS:
        return []
    entries = strings(field(allow, "ports"))
    if not entries:  # no ports listed: every port of the protocol
        return list(ports)
    return [port for port in ports if any(_port_range_includes(entry, port) for entry in entries)]


def _configured_ports(config: Mapping[str, Any]) -> tuple[int, ...]:
    raw = config.get("vllmPorts")
    if raw is None:
        return DEFAULT_VLLM_PORTS
    found = tuple(int(n) for n in (number(p) for p in raw) if n is not None)
    return found or DEFAULT_VLLM_PORTS


def check_vllm_port_not_public(_type: str, props: Mapping[str, Any], config: Mapping[str, Any]) -> Iterator[str]:
    direction = str(field(props, "direction") or "INGRESS").upper()
    if direction != "INGRESS" or field(props, "disabled") is True:
        return
    # Judged as a union: 0.0.0.0/1 + 128.0.0.0/1 is the whole internet as surely as 0.0.0.0/0.
    wide = too_wide(strings(field(props, "sourceRanges")))
    if not wide:
        return
    ports = _configured_ports(config)
    for index, allow in enumerate(mappings(field(props, "allows"))):
        opened = _opened_ports(allow, ports)
        if opened:
            yield (
                f"allows[{index}] opens port {', '.join(map(str, opened))} (vLLM) to "
                f"{'; '.join(describe(item) for item in wide)}; vLLM's --api-key guards only /v1/*, so /metrics "
                f"and /tokenize answer anyone there without the key: allow {allowed_text()}, or keep the server "
                "internal"
            )


VLLM_PORT_NOT_PUBLIC = Guardrail(
    name="vllm-port-not-public",
    description=(
        f"No ingress firewall rule opens the vLLM port ({DEFAULT_VLLM_PORT} by default) to the public internet, "
        "judged over the union of its source ranges."
    ),
    resource_types=frozenset({FIREWALL}),
    check=check_vllm_port_not_public,
    config_schema=CONFIG_SCHEMA,
)
