"""Each row format becomes the conversation the chat template needs, or a reject with a reason."""

from __future__ import annotations

import json

import pytest

from draftgen.generator.rows.formats import (
    RowError,
    parse_conversation,
    parse_pretokenized,
    parse_sharegpt,
)
from draftgen.generator.rows.glaive import parse_glaive

WEATHER = {
    "name": "get_weather",
    "description": "Current weather",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
}
NEWS = {
    "name": "get_news",
    "description": "Headlines",
    "parameters": {"type": "object", "properties": {"topic": {"type": "string"}}},
}
PREAMBLE = (
    "SYSTEM: You are a helpful assistant with access to the following functions. "
    "Use them if required -\n"
)


def reason(fmt: str, row) -> str:
    with pytest.raises(RowError) as err:
        parse_conversation(fmt, row)
    return err.value.reason


# ---------------------------------------------------------------------------------- messages


def test_messages_keep_tools_and_tool_calls_with_the_arguments_string_as_given():
    row = {
        "messages": [
            {"role": "user", "content": "Weather in Oslo?"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": '{"t": 3}'},
            {"role": "assistant", "content": "3 degrees.", "weight": 1},
        ],
        "tools": [{"type": "function", "function": WEATHER}],
    }
    conv = parse_conversation("messages", row)
    assert conv.tools == [{"type": "function", "function": WEATHER}]
    call = conv.messages[1]["tool_calls"][0]
    assert call == {
        "id": "c1",
        "type": "function",
        "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'},
    }
    assert conv.messages[1]["content"] == ""  # None would render as the text "None"
    assert conv.messages[3] == {"role": "assistant", "content": "3 degrees."}  # bookkeeping dropped


def test_messages_text_parts_are_kept_and_tools_may_be_a_json_string():
    """Several text parts stay parts: the renderer hands them on as SGLang's chat endpoint does
    (test_content_parts.py)."""
    row = {
        "messages": [
            {
                "role": "user",
                "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
            }
        ],
        "tools": json.dumps([WEATHER]),
    }
    conv = parse_conversation("messages", row)
    assert conv.messages == [
        {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}
    ]
    assert conv.tools[0]["function"]["name"] == "get_weather"


@pytest.mark.parametrize(
    "row, expected",
    [
        ({}, "missing_field"),
        ({"messages": "hello"}, "wrong_type"),
        ({"messages": []}, "empty_conversation"),
        (
            {"messages": [{"role": "system", "content": "only a system prompt"}]},
            "empty_conversation",
        ),
        ({"messages": [{"role": "narrator", "content": "x"}]}, "unknown_role"),
        ({"messages": [{"content": "x"}]}, "missing_field"),
        ({"messages": [{"role": "user"}]}, "missing_field"),
        ({"messages": [{"role": "user", "content": 42}]}, "wrong_type"),
        ({"messages": ["hi"]}, "wrong_type"),
        (
            {"messages": [{"role": "user", "content": "x"}], "tools": [{"description": "no name"}]},
            "bad_tools",
        ),
        ({"messages": [{"role": "user", "content": "x"}], "tools": "{not json"}, "bad_tools"),
        (
            {
                "messages": [
                    {"role": "user", "content": "x"},
                    {
                        "role": "assistant",
                        "tool_calls": [{"function": {"name": "f", "arguments": "{broken"}}],
                    },
                ]
            },
            "bad_tool_call",
        ),
    ],
)
def test_messages_rejects(row, expected):
    assert reason("messages", row) == expected


# ---------------------------------------------------------------------------------- sharegpt


def test_sharegpt_from_value():
    conv = parse_conversation(
        "sharegpt",
        {
            "conversations": [
                {"from": "system", "value": "Be brief."},
                {"from": "human", "value": "Hi"},
                {"from": "gpt", "value": "Hello"},
                {"from": "human", "value": "Bye"},
            ]
        },
    )
    assert [m["role"] for m in conv.messages] == ["system", "user", "assistant", "user"]
    assert conv.messages[2]["content"] == "Hello"


def test_sharegpt_role_content_variant_matches_from_value():
    a = parse_conversation(
        "sharegpt",
        {"conversations": [{"from": "human", "value": "Hi"}, {"from": "gpt", "value": "Hello"}]},
    )
    b = parse_conversation(
        "sharegpt",
        {
            "conversations": [
                {"role": "user", "content": "Hi"},
                {"role": "assistant", "content": "Hello"},
            ]
        },
    )
    assert a == b


def test_sharegpt_function_call_and_observation_become_tool_calls_and_tool_messages():
    conv = parse_sharegpt(
        {
            "system": "Use tools.",
            "tools": json.dumps([WEATHER]),
            "conversations": [
                {"from": "human", "value": "Weather in Rome?"},
                {
                    "from": "function_call",
                    "value": json.dumps({"name": "get_weather", "arguments": {"city": "Rome"}}),
                },
                {"from": "observation", "value": '{"t": 21}'},
                {"from": "gpt", "value": "21 degrees."},
            ],
        }
    )
    assert conv.messages[0] == {"role": "system", "content": "Use tools."}
    call = conv.messages[2]["tool_calls"][0]
    assert call["function"] == {"name": "get_weather", "arguments": {"city": "Rome"}}
    assert conv.messages[3]["role"] == "tool" and conv.messages[3]["tool_call_id"] == call["id"]
    assert conv.tools[0]["function"]["name"] == "get_weather"


@pytest.mark.parametrize(
    "row, expected",
    [
        ({"conversations": [{"from": "alien", "value": "x"}]}, "unknown_role"),
        ({"conversations": [{"value": "x"}]}, "missing_field"),
        ({"conversations": [{"from": "human"}]}, "missing_field"),
        ({"conversations": []}, "empty_conversation"),
        ({"messages": [{"role": "user", "content": "x"}]}, "missing_field"),
    ],
)
def test_sharegpt_rejects(row, expected):
    assert reason("sharegpt", row) == expected


# ------------------------------------------------------------------------------------ glaive


def glaive_row(system: str, *turns: str) -> dict:
    return {"system": system, "chat": "".join(t + "\n\n\n" for t in turns)}


def test_glaive_one_function_call_with_single_quoted_arguments():
    row = glaive_row(
        PREAMBLE + json.dumps(WEATHER, indent=4),
        "USER: What's the weather in Lagos?",
        'ASSISTANT: <functioncall> {"name": "get_weather", "arguments": \'{"city": "Lagos"}\'} <|endoftext|>',
        'FUNCTION RESPONSE: {"temperature": 20}',
        "ASSISTANT: It is 20 degrees in Lagos. <|endoftext|>",
    )
    conv = parse_glaive(row)
    assert conv.tools == [{"type": "function", "function": WEATHER}]
    system, user, call, response, answer = conv.messages
    assert system["role"] == "system" and "helpful assistant" in system["content"]
    assert "{" not in system["content"]  # the definitions moved into tools
    assert call["tool_calls"][0]["function"] == {
        "name": "get_weather",
        "arguments": '{"city": "Lagos"}',  # the quoted JSON, verbatim
    }
    assert conv.normalized == ("glaive_quoted_arguments",)
    assert response == {
        "role": "tool",
        "content": '{"temperature": 20}',
        "tool_call_id": call["tool_calls"][0]["id"],
    }
    assert answer == {"role": "assistant", "content": "It is 20 degrees in Lagos."}
    assert all("<|endoftext|>" not in (m["content"] or "") for m in conv.messages)


def test_glaive_argument_string_with_apostrophes_and_nested_quotes():
    call = (
        'ASSISTANT: <functioncall> {"name": "search", "arguments": '
        '\'{"query": "Dune \'the movie\'", "n": 2}\'} <|endoftext|>'
    )
    conv = parse_glaive(glaive_row(PREAMBLE + json.dumps({"name": "search"}), "USER: find", call))
    assert conv.messages[-1]["tool_calls"][0]["function"]["arguments"] == (
        '{"query": "Dune \'the movie\'", "n": 2}'
    )


def test_glaive_several_functions_follow_one_another():
    system = PREAMBLE + json.dumps(WEATHER, indent=4) + "\n\n" + json.dumps(NEWS, indent=2)
    conv = parse_glaive(glaive_row(system, "USER: hi", "ASSISTANT: hello <|endoftext|>"))
    assert [t["function"]["name"] for t in conv.tools] == ["get_weather", "get_news"]


def test_glaive_without_functions():
    conv = parse_glaive(
        glaive_row(
            "SYSTEM: You are a helpful assistant, with no access to external functions.",
            "USER: Tell me a joke",
            "ASSISTANT: Why did ... <|endoftext|>",
        )
    )
    assert conv.tools is None
    assert conv.messages[0] == {
        "role": "system",
        "content": "You are a helpful assistant, with no access to external functions.",
    }


def test_glaive_tools_field_wins_over_system_text():
    row = glaive_row("SYSTEM: You are helpful.", "USER: hi")
    row["tools"] = json.dumps([NEWS])
    assert [t["function"]["name"] for t in parse_glaive(row).tools] == ["get_news"]


def test_glaive_valid_json_arguments_object_is_accepted():
    call = (
        'ASSISTANT: <functioncall> {"name": "get_news", "arguments": {"topic": "AI"}} <|endoftext|>'
    )
    conv = parse_glaive(glaive_row(PREAMBLE + json.dumps(NEWS), "USER: news?", call))
    assert conv.messages[-1]["tool_calls"][0]["function"]["arguments"] == {"topic": "AI"}
    assert conv.normalized == ()


@pytest.mark.parametrize(
    "row, expected",
    [
        (glaive_row(PREAMBLE + '{"name": "broken", "parameters": {', "USER: hi"), "bad_tools"),
        (glaive_row(PREAMBLE + '{"description": "nameless"}', "USER: hi"), "bad_tools"),
        (
            glaive_row(
                PREAMBLE + json.dumps(WEATHER),
                "USER: hi",
                'ASSISTANT: <functioncall> {"name": "get_weather", "arguments": \'{city: Lagos}\'} <|endoftext|>',
            ),
            "bad_tool_call",
        ),
        (
            glaive_row(
                PREAMBLE + json.dumps(WEATHER),
                "USER: hi",
                "ASSISTANT: <functioncall> not json at all",
            ),
            "bad_tool_call",
        ),
        (
            glaive_row(PREAMBLE + json.dumps(WEATHER), "USER: hi", "FUNCTION RESPONSE: {}"),
            "bad_tool_call",
        ),
        ({"system": "SYSTEM: hi"}, "missing_field"),
        ({"system": "SYSTEM: hi", "chat": ["USER: hi"]}, "wrong_type"),
        ({"system": "SYSTEM: hi", "chat": ""}, "empty_conversation"),
    ],
)
def test_glaive_rejects(row, expected):
    assert reason("glaive", row) == expected


# ------------------------------------------------------------------------ prompt, pretokenized


def test_prompt_with_and_without_system():
    assert parse_conversation("prompt", {"prompt": "Hi"}).messages == [
        {"role": "user", "content": "Hi"}
    ]
    assert parse_conversation("prompt", {"prompt": "Hi", "system": "Be terse."}).messages == [
        {"role": "system", "content": "Be terse."},
        {"role": "user", "content": "Hi"},
    ]


@pytest.mark.parametrize(
    "row, expected",
    [
        ({"text": "Hi"}, "missing_field"),
        ({"prompt": ["Hi"]}, "wrong_type"),
        ({"prompt": "   "}, "empty_conversation"),
        ({"prompt": "Hi", "system": 3}, "wrong_type"),
    ],
)
def test_prompt_rejects(row, expected):
    assert reason("prompt", row) == expected


def test_pretokenized_ids_pass_through_untouched():
    ids = [163587, 5, 70_000, 163606]
    assert parse_pretokenized({"input_ids": ids}, 163_840) is ids


@pytest.mark.parametrize(
    "ids, expected",
    [
        (None, "missing_field"),
        ("1 2 3", "wrong_type"),
        ([], "empty_prompt"),
        ([1, -1], "bad_token_id"),
        ([1, 163_840], "bad_token_id"),
        ([1, 2.0], "bad_token_id"),
        ([True], "bad_token_id"),
        ([1, "2"], "bad_token_id"),
    ],
)
def test_pretokenized_rejects(ids, expected):
    with pytest.raises(RowError) as err:
        parse_pretokenized({} if ids is None else {"input_ids": ids}, 163_840)
    assert err.value.reason == expected


def test_glaive_definitions_may_be_a_list_and_brackets_in_the_preamble_are_text():
    system = "SYSTEM: You are [a helpful] assistant. Use these -\n" + json.dumps([WEATHER, NEWS])
    conv = parse_glaive(glaive_row(system, "USER: hi"))
    assert [t["function"]["name"] for t in conv.tools] == ["get_weather", "get_news"]
    assert conv.messages[0]["content"] == "You are [a helpful] assistant. Use these"
