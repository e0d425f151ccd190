"""The rules around the reply parsers (generator/prompts/replies): `compare_calls`' outcomes,
the dataset's calls read for it, and that no text, however broken, makes a parser raise."""

from __future__ import annotations

import random
from typing import Any

import pytest

from draftgen.generator.prompts.replies import (
    DeepSeekParser,
    GptOssParser,
    KimiParser,
    Llama3Parser,
    Qwen3Parser,
    ToolCall,
    calls_of_message,
    compare_calls,
    rename_tool_results,
)

from .test_replies import fn


def call(name: str, **arguments: Any) -> ToolCall:
    return ToolCall(name, arguments)


@pytest.mark.parametrize(
    ("generated", "expected", "outcome"),
    [
        ([], [], "match"),
        ([call("f", a=1, b=[1, 2])], [call("f", b=[1, 2.0], a=1)], "match"),
        ([call("f", a=1), call("g")], [call("f", a=1), call("g")], "match"),
        ([], [call("f")], "no_tool_call"),
        ([call("f")], [], "extra_tool_call"),
        ([call("f"), call("g")], [call("f")], "extra_tool_call"),
        ([call("f")], [call("f"), call("g")], "missing_tool_call"),
        ([call("g"), call("f")], [call("f"), call("g")], "tool_call_diverged"),
        ([call("f", a=1)], [call("f", a=2)], "tool_call_diverged"),
        ([call("f", a=True)], [call("f", a=1)], "tool_call_diverged"),
        ([call("f", a=None)], [call("f", a=0)], "tool_call_diverged"),
        ([call("f", a=[1, 2])], [call("f", a=[2, 1])], "tool_call_diverged"),
        ([call("f", a=1)], [call("f", a=1, b=2)], "tool_call_diverged"),
        ([ToolCall("f", None, "{bad")], [ToolCall("f", None, "{bad")], "tool_call_diverged"),
    ],
)
def test_compare_calls(generated, expected, outcome):
    assert compare_calls(generated, expected) == outcome


def test_dataset_calls_read_with_string_or_object_arguments():
    message = {
        "role": "assistant",
        "tool_calls": [
            fn("get_weather", '{"city": "Paris"}'),
            fn("get_time", {"city": "Paris"}),
            fn("get_time", "{not json"),
        ],
    }
    assert [(c.name, c.arguments) for c in calls_of_message(message)] == [
        ("get_weather", {"city": "Paris"}),
        ("get_time", {"city": "Paris"}),
        ("get_time", None),
    ]


PARSERS = [
    KimiParser(),
    Qwen3Parser(),
    DeepSeekParser(),
    DeepSeekParser(family="deepseek-r1", fenced_calls=True, closing_ends_reasoning=True),
    GptOssParser(),
    Llama3Parser(),
]
# Every family's markers and a few fragments of JSON and text, for replies no model should write
PIECES = [
    "<think>", "</think>", "<|tool_calls_section_begin|>", "<|tool_call_begin|>",
    "<|tool_call_argument_begin|>", "<|tool_call_end|>", "<|tool_calls_section_end|>",
    "<tool_call>", "</tool_call>", "<｜tool▁calls▁begin｜>", "<｜tool▁call▁begin｜>",
    "<｜tool▁sep｜>", "<｜tool▁call▁end｜>", "<｜tool▁calls▁end｜>", "<|start|>", "<|channel|>",
    "<|message|>", "<|end|>", "<|call|>", "<|return|>", "<|constrain|>", " to=functions.f",
    "<|python_tag|>", "<|eot_id|>", "<|im_end|>", "<｜end▁of▁sentence｜>", "analysis", "final",
    "commentary", "assistant", '{"name": "f", ', '"arguments": {"a": 1}}', '"parameters": ',
    "{", "}", "[", '"', ";", "\n", "```json\n", "\n```", "function", "f.call(a=\"1\")", "text",
]  # fmt: skip


@pytest.mark.parametrize("parser", PARSERS, ids=lambda p: p.family)
def test_any_text_parses_without_an_error(parser):
    rng = random.Random(29)
    for _ in range(400):
        text = "".join(rng.choice(PIECES) for _ in range(rng.randint(0, 14)))
        for started in (False, True):
            reply = parser.parse(text, started_in_reasoning=started)
            message = reply.as_message(history_calls=1)
            assert isinstance(message["content"], str)
            assert compare_calls(reply.tool_calls, [ToolCall("f", {"a": 1})]) in (
                "match", "tool_call_diverged", "no_tool_call", "extra_tool_call",
            )  # fmt: skip


def test_tool_results_answer_the_ids_the_server_gave():
    reply = KimiParser().parse(
        "<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0"
        '<|tool_call_argument_begin|>{"city": "Paris"}<|tool_call_end|><|tool_calls_section_end|>'
    )
    results = [
        {"role": "tool", "tool_call_id": "call_1", "content": "21"},
        {"role": "tool", "tool_call_id": "other", "content": "?"},
        {"role": "user", "content": "thanks"},
    ]
    renamed = rename_tool_results(results, dict(zip(["call_1"], reply.call_ids(2), strict=True)))
    assert [m.get("tool_call_id") for m in renamed] == ["functions.get_weather:2", "other", None]
    assert results[0]["tool_call_id"] == "call_1"  # the dataset's messages are not changed
