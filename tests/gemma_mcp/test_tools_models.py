"""The models tool against the local fake of the GCS JSON API, the bucket from the stack's outputs."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import pytest

from remote.google_client import GoogleApis
from tests.gemma_mcp.conftest import FakePulumi, connect, make_context, text_of
from tests.verify.ops.google_fake import FakeGoogle, tokens
from tests.verify.test_models_command import BUCKET, SERVED, install_bucket, marker_body


@pytest.fixture
def fake() -> Iterator[FakeGoogle]:
    with FakeGoogle() as server:
        yield server


async def test_models_lists_the_stacks_bucket_from_its_outputs(fake: FakeGoogle) -> None:
    """The agent names a stack; the bucket comes from its modelBucket output, the served path from its file."""
    install_bucket(fake, marker_body())
    pulumi = FakePulumi(outputs_by_stack={"l4": {"modelBucket": BUCKET}})
    ctx = dataclasses.replace(make_context(pulumi=pulumi), google=lambda: GoogleApis(tokens, api_root=fake.url))
    async with connect(ctx) as client:
        result = await client.call_tool("models", {"stack": "l4"})
    assert not result.is_error, result.content
    found = result.structured_content
    assert (found["bucket"], found["exit_code"], found["passed"]) == (BUCKET, 0, True)
    served = next(c for c in found["report"]["checkpoints"] if c["path"] == SERVED)
    assert served["state"] == "complete"
    assert served["served_by"] == ["l4"]
    assert f"{SERVED}: complete" in text_of(result)
    assert pulumi.calls == [("outputs", "l4", ())]


async def test_models_of_a_stack_without_outputs_asks_for_the_bucket() -> None:
    pulumi = FakePulumi(outputs_by_stack={"l4": {}})
    async with connect(make_context(pulumi=pulumi)) as client:
        result = await client.call_tool("models", {"stack": "l4"})
    assert result.is_error
    assert "no modelBucket output" in text_of(result)


async def test_models_refuses_a_bucket_that_is_not_a_bucket_name() -> None:
    """A path or URL given as the bucket is refused before any Google call, naming the rule."""
    async with connect() as client:
        result = await client.call_tool("models", {"stack": "l4", "bucket": "../../etc"})
    assert result.is_error
    assert "not a Cloud Storage bucket name" in text_of(result)
