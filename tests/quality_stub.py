"""A vLLM-shaped stub that answers the quality gate's questions (verify/health/quality.py) right, or breaks one.

Why a stub: the gate judges answers, and the tiny CPU model of the live tests answers gibberish, so what
it proves there is only the plumbing. This stub answers the way a healthy Gemma 4 deployment with a tool
parser and a reasoning parser does (tool calls in ``message.tool_calls`` with JSON arguments, reasoning in
``message.reasoning``), and each ``break_*`` flag breaks one behaviour the way a regression does: a tool
parser that is off (the call left as text in ``content``), arguments that are not JSON, the reasoning split
gone. Everything else (health, models, streaming, metrics) is tests/fake_vllm.py's.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from aiohttp import web
from aiohttp.typedefs import Handler, Middleware

from tests.fake_vllm import CHAT_PATH, FakeVllm, FakeVllmConfig


@dataclass(frozen=True)
class Breakage:
    tool_call_as_text: bool = False  # the tool parser is off: the call comes back as content
    tool_arguments_not_json: bool = False
    no_reasoning: bool = False
    wrong_sum: bool = False


class QualityStub(FakeVllm):
    def __init__(self, breakage: Breakage | None = None, config: FakeVllmConfig | None = None) -> None:
        super().__init__(config or FakeVllmConfig())
        self.breakage = breakage or Breakage()

    def middlewares(self) -> list[Middleware]:
        return [*super().middlewares(), self._answer_quality]

    @web.middleware
    async def _answer_quality(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        if request.path != CHAT_PATH or request.method != "POST":
            return await handler(request)
        body = json.loads(await request.read())
        if body.get("stream"):
            return await handler(request)
        question = str(body["messages"][-1]["content"])
        message = self._message(question, tools=bool(body.get("tools")))
        if message is None:
            return await handler(request)
        return web.json_response(
            {
                "object": "chat.completion",
                "model": body["model"],
                "choices": [{"index": 0, "message": {"role": "assistant", **message}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
            }
        )

    def _message(self, question: str, *, tools: bool) -> dict[str, object] | None:  # noqa: PLR0911 - one answer per question
        broken = self.breakage
        if tools:
            city = re.search(r"weather in (\w+)", question)
            arguments = json.dumps({"city": city.group(1) if city else "?", "unit": "celsius"})
            if broken.tool_arguments_not_json:
                arguments = arguments[:-2]
            if broken.tool_call_as_text:
                return {"content": f"<tool_call>get_weather({arguments})</tool_call>"}
            call = {"id": "call-1", "type": "function", "function": {"name": "get_weather", "arguments": arguments}}
            return {"content": None, "tool_calls": [call]}
        if (total := re.search(r"What is (\d+) \+ (\d+)\?", question)) is not None:
            answer = int(total.group(1)) + int(total.group(2)) + (1 if broken.wrong_sum else 0)
            return {"content": str(answer)}
        if (text := re.search(r"nothing else: (\{.*\})", question)) is not None:
            return {"content": text.group(1)}
        if (code := re.search(r"The secret code is ([A-Z0-9-]+)\.", question)) is not None:
            return {"content": code.group(1)}
        if "6 x 7" in question:
            return {"content": "42"} if broken.no_reasoning else {"content": "42", "reasoning": "6 times 7 is 42."}
        return None
