"""Run by the SGLang venv's Python (tests/generator_input/test_replies_sglang.py): parse replies
with SGLang's own reasoning parsers and function-call detectors, as its chat endpoint does for a
non-streamed completion (serving_chat: the reasoning split, then the tool-call parser on the rest
when it sees a call), and print what a client would receive. Reads a JSON list of
{reasoning_parser, tool_parser, force_reasoning, text} on stdin; writes a JSON list of
{content, reasoning, calls: [[name, arguments-json]]} on stdout."""

from __future__ import annotations

import json
import sys

from sglang.srt.entrypoints.openai.protocol import Tool
from sglang.srt.function_call.function_call_parser import FunctionCallParser
from sglang.srt.parser.reasoning_parser import ReasoningParser

TOOLS = [
    Tool(
        type="function",
        function={
            "name": name,
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    )
    for name in ("get_weather", "get_time")
]


def parse(case: dict) -> dict:
    text, reasoning = case["text"], None
    if case["reasoning_parser"]:
        parser = ReasoningParser(
            case["reasoning_parser"],
            stream_reasoning=False,
            force_reasoning=case["force_reasoning"],
            tool_call_parser_active=True,
        )
        reasoning, text = parser.parse_non_stream(text)
    calls = []
    tools = FunctionCallParser(TOOLS, case["tool_parser"])
    if tools.has_tool_call(text):
        try:
            rest, items = tools.parse_non_stream(text)
        except Exception:  # serving_chat logs it and returns the text as it is
            rest, items = text, []
        if items:  # no call parsed: the text goes back as it is (serving_chat)
            text = rest
            calls = [[item.name, item.parameters] for item in items]
    return {"content": text or "", "reasoning": reasoning or None, "calls": calls}


if __name__ == "__main__":
    json.dump([parse(case) for case in json.load(sys.stdin)], sys.stdout)
