"""The pack starts the way the Pulumi CLI starts it, and answers the CLI's analyzer calls.

Guards against a pack that imports fine in pytest (repository root on sys.path) but dies under the CLI,
which runs `python -m pulumi.policy <engine> <pack dir>` with only the pack directory on the path, and
against rules that pass in plain calls but not behind pulumi-policy's own request handling (properties
arriving as protobuf structs, proxies, enforcement levels): either would break every pull request's
preview, or worse, let a public service through.
"""

from __future__ import annotations

import selectors
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc  # type: ignore[import-untyped]
import pytest
from google.protobuf import empty_pb2, struct_pb2  # type: ignore[import-untyped]
from pulumi.runtime.proto import analyzer_pb2, analyzer_pb2_grpc

from policy.rules import GUARDRAILS
from tests.policy.props import gpu_service

PACK_DIR = Path(__file__).resolve().parents[2] / "policy"
STARTUP_TIMEOUT_S = 60.0
RPC_TIMEOUT_S = 30.0


@pytest.fixture(scope="module")
def analyzer(tmp_path_factory: pytest.TempPathFactory) -> Iterator[analyzer_pb2_grpc.AnalyzerStub]:
    """The pack, started from outside the repository; its first stdout line is the port the CLI dials."""
    process = subprocess.Popen(
        [sys.executable, "-u", "-m", "pulumi.policy", "127.0.0.1:1", str(PACK_DIR)],
        cwd=tmp_path_factory.mktemp("cli"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        with selectors.DefaultSelector() as selector:
            selector.register(process.stdout, selectors.EVENT_READ)
            ready = selector.select(timeout=STARTUP_TIMEOUT_S)
        line = process.stdout.readline() if ready else ""
        if not line.strip().isdigit():
            process.kill()
            _, stderr = process.communicate(timeout=10)
            raise AssertionError(f"the pack did not report a port; stdout {line!r}, stderr:\n{stderr[-2000:]}")
        with grpc.insecure_channel(f"127.0.0.1:{int(line)}") as channel:
            yield analyzer_pb2_grpc.AnalyzerStub(channel)
    finally:
        if process.poll() is None:
            process.terminate()
            process.communicate(timeout=10)


def analyze(stub: analyzer_pb2_grpc.AnalyzerStub, resource_type: str, props: dict[str, Any]) -> list[Any]:
    properties = struct_pb2.Struct()
    properties.update(props)
    request = analyzer_pb2.AnalyzeRequest(
        type=resource_type,
        properties=properties,
        urn=f"urn:pulumi:test::gemma-serving::{resource_type}::r",
        name="r",
    )
    return list(stub.Analyze(request, timeout=RPC_TIMEOUT_S).diagnostics)


def test_pack_lists_every_guardrail_as_mandatory(analyzer: analyzer_pb2_grpc.AnalyzerStub) -> None:
    """The CLI sees exactly our guardrails, each able to block an update."""
    info = analyzer.GetAnalyzerInfo(empty_pb2.Empty(), timeout=RPC_TIMEOUT_S)
    assert [policy.name for policy in info.policies] == [g.name for g in GUARDRAILS]
    assert {policy.enforcementLevel for policy in info.policies} == {analyzer_pb2.MANDATORY}


def test_public_invoker_is_a_mandatory_violation(analyzer: analyzer_pb2_grpc.AnalyzerStub) -> None:
    """An allUsers invoker sent the way the CLI sends it comes back as a blocking violation."""
    diagnostics = analyze(
        analyzer,
        "gcp:cloudrunv2/serviceIamMember:ServiceIamMember",
        {"role": "roles/run.invoker", "member": "allUsers", "name": "svc", "location": "us-east4"},
    )
    assert [d.policyName for d in diagnostics] == ["cloud-run-not-public"]
    assert diagnostics[0].enforcementLevel == analyzer_pb2.MANDATORY
    assert "allUsers" in diagnostics[0].message


def test_rendered_gpu_service_shape_passes_and_breaks(analyzer: analyzer_pb2_grpc.AnalyzerStub) -> None:
    """A good GPU service passes every guardrail through the protocol; lowering its concurrency fails."""
    props = gpu_service()
    assert analyze(analyzer, "gcp:cloudrunv2/service:Service", props) == []
    props["template"]["maxInstanceRequestConcurrency"] = 4.0
    diagnostics = analyze(analyzer, "gcp:cloudrunv2/service:Service", props)
    assert [d.policyName for d in diagnostics] == ["gpu-service-concurrency-covers-batch"]
