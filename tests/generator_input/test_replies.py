"""Replies read back into messages (generator/prompts/replies): for each family, an assistant turn
with reasoning and tool calls is rendered by the family's fixture chat template, its ids (what
the model generates after the prompt) decoded with special tokens kept and parsed; the message
parsed renders exactly as the one written, so a chain's next prompt is what a production server
would build from a client sending the reply back. Texts a template cannot render (reasoning it
drops, R1's fenced calls, harmony's own call header) are written as the family's docs give them.
Malformed and cut-off calls; each fixture family's parser detected, an unknown one refused.
compare_calls and the fuzzing are in test_replies_rules.py, the check against SGLang's own
parsers in test_replies_sglang.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from transformers import AutoTokenizer

from draftgen.generator.prompts.replies import (
    DeepSeekParser,
    GptOssParser,
    KimiParser,
    Llama3Parser,
    Qwen3Parser,
    ToolCall,
    UnknownReplyFamily,
    calls_of_message,
    compare_calls,
    reply_parser_for,
    reply_parser_for_tokenizer,
)
from tests.generator.gen_helpers import WEATHER_TOOL

from .tokenizer_fixture import KIMI_LIKE, SPECIALS

REPO = Path(__file__).resolve().parents[2]
TINY_KIMI = REPO / ".cache" / "models" / "tiny-kimi"

TIME_TOOL = {
    "type": "function",
    "function": {
        "name": "get_time",
        "description": "Local time in a city",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "h24": {"type": "boolean"}},
            "required": ["city"],
        },
    },
}
TOOLS = [WEATHER_TOOL, TIME_TOOL]
HISTORY = [{"role": "user", "content": "Weather and time in Paris?"}]
REASONING = "The user wants two things: call both tools."


def fn(name: str, arguments: Any, call_id: str = "call_1") -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


WEATHER = fn("get_weather", json.dumps({"city": "Paris"}), "call_0")
TIME = fn("get_time", json.dumps({"city": "Paris", "h24": True}), "call_1")


_LOADED: dict[str, Any] = {}


def tokenizer(family_tokenizer_dir, family: str):
    """The family's fixture tokenizer (Kimi-K2.5's: the project's tiny-kimi), loaded once."""
    if family == "kimi-k2.5" and not (TINY_KIMI / "tokenizer.json").exists():
        pytest.skip("tiny-kimi not built yet: run `make models`")
    if family not in _LOADED:
        where = TINY_KIMI if family == "kimi-k2.5" else family_tokenizer_dir(family)
        _LOADED[family] = AutoTokenizer.from_pretrained(where)
    return _LOADED[family]


def generated(tok, message: dict[str, Any], end: str, **kwargs: Any) -> tuple[str, str]:
    """(the prompt's text, the decoded ids the model generates for `message` after it, up to and
    with its end token), from the template's own rendering of the conversation with it."""
    render = dict(tools=TOOLS, tokenize=True, return_dict=False, **kwargs)
    prompt = list(tok.apply_chat_template(HISTORY, add_generation_prompt=True, **render))
    full = list(tok.apply_chat_template([*HISTORY, message], **render))
    assert full[: len(prompt)] == prompt, "the turn does not extend the generation prompt"
    text = tok.decode(full[len(prompt) :], skip_special_tokens=False)
    return tok.decode(prompt, skip_special_tokens=False), text[: text.rindex(end) + len(end)]


def rendered(tok, message: dict[str, Any], objects: bool, **kwargs: Any) -> str:
    """The conversation with `message`; with `objects`, JSON-string arguments go as objects, as
    draftgen's renderer sends them to a template that prints them with `tojson` (Llama-3.1)."""
    if objects:
        calls = message.get("tool_calls") or []
        message = {
            **message,
            "tool_calls": [
                {**c, "function": {**c["function"], "arguments": json.loads(args)}}
                if isinstance(args := c["function"]["arguments"], str)
                else c
                for c in calls
            ],
        }
    return tok.apply_chat_template([*HISTORY, message], tools=TOOLS, tokenize=False, **kwargs)


# (family, the assistant turn as written, its end token, template kwargs, reasoning key)
ROUND_TRIPS = [
    pytest.param(
        "kimi-k2.5",
        {"role": "assistant", "content": "Checking.", "reasoning_content": REASONING,
         "tool_calls": [WEATHER, TIME]},
        "<|im_end|>", {}, "reasoning_content", id="kimi-k2.5-parallel-calls",
    ),
    pytest.param(
        "kimi-k2.5",
        {"role": "assistant", "content": "It is sunny.", "reasoning_content": REASONING},
        "<|im_end|>", {}, "reasoning_content", id="kimi-k2.5-answer",
    ),
    pytest.param(
        "qwen3",
        {"role": "assistant", "content": "Checking both.", "reasoning_content": REASONING,
         "tool_calls": [WEATHER, TIME]},
        "<|im_end|>", {}, "reasoning_content", id="qwen3-parallel-calls",
    ),
    pytest.param(
        "qwen3",
        {"role": "assistant", "content": "It is sunny.", "reasoning_content": REASONING},
        "<|im_end|>", {}, "reasoning_content", id="qwen3-answer",
    ),
    pytest.param(
        "deepseek-v3.1",
        {"role": "assistant", "content": "", "tool_calls": [WEATHER, TIME]},
        "<｜end▁of▁sentence｜>", {"thinking": False}, "reasoning_content",
        id="deepseek-v3.1-parallel-calls",
    ),
    pytest.param(
        "gpt-oss",
        {"role": "assistant", "content": "", "thinking": REASONING,
         "tool_calls": [WEATHER, TIME]},
        "<|call|>", {}, "thinking", id="gpt-oss-parallel-calls",
    ),
    pytest.param(
        "gpt-oss",
        {"role": "assistant", "content": "It is sunny."},
        "<|end|>", {}, "thinking", id="gpt-oss-answer",
    ),
    pytest.param(
        "llama-3.1",
        {"role": "assistant", "content": "",
         "tool_calls": [fn("get_weather", {"city": "Paris"})]},
        "<|eot_id|>", {}, "reasoning_content", id="llama-3.1-call",
    ),
    pytest.param(
        "llama-3.1",
        {"role": "assistant", "content": "It is sunny."},
        "<|eot_id|>", {}, "reasoning_content", id="llama-3.1-answer",
    ),
]  # fmt: skip


@pytest.mark.parametrize(("family", "message", "end", "kwargs", "reasoning_key"), ROUND_TRIPS)
def test_a_reply_parses_back_into_the_message_the_template_rendered(
    family_tokenizer_dir, family, message, end, kwargs, reasoning_key
):
    tok = tokenizer(family_tokenizer_dir, family)
    parser = reply_parser_for_tokenizer(tok)
    prompt, text = generated(tok, message, end, **kwargs)
    if family == "gpt-oss" and text.endswith("<|end|>"):
        # harmony: the model ends its final answer with `<|return|>`, history writes `<|end|>`
        text = text.removesuffix("<|end|>") + "<|return|>"

    reply = parser.parse(text, started_in_reasoning=parser.prompt_opens_reasoning(prompt))

    back = reply.as_message(reasoning_key=reasoning_key)
    objects = family == "llama-3.1"
    assert rendered(tok, back, objects, **kwargs) == rendered(tok, message, objects, **kwargs)
    assert compare_calls(reply.tool_calls, calls_of_message(message)) == "match"
    assert [c["function"]["name"] for c in back.get("tool_calls", [])] == [
        c["function"]["name"] for c in message.get("tool_calls", [])
    ]
    assert back["content"].strip() == message["content"]
    if reasoning_key in message:
        assert (back.get(reasoning_key) or "").strip() == message[reasoning_key]


def test_kimi_ids_count_the_conversations_earlier_calls():
    """SGLang names Kimi's calls `functions.NAME:N`, N counting every call in the history."""
    reply = KimiParser().parse(
        "<|tool_calls_section_begin|><|tool_call_begin|>functions.get_time:0"
        '<|tool_call_argument_begin|>{"city": "Oslo"}<|tool_call_end|><|tool_calls_section_end|>'
    )
    assert [c["id"] for c in reply.as_message(history_calls=3)["tool_calls"]] == [
        "functions.get_time:3"
    ]


# What the models write that no template renders back: (parser, text, started_in_reasoning,
# content, reasoning, calls as (name, arguments)).
WRITTEN = [
    pytest.param(
        DeepSeekParser(),
        f"{REASONING}</think>Sunny, 21 °C.<｜end▁of▁sentence｜>", True,
        "Sunny, 21 °C.", REASONING, [], id="deepseek-v3.1-thinking",
    ),
    pytest.param(
        DeepSeekParser(family="deepseek-r1", fenced_calls=True, closing_ends_reasoning=True),
        f"{REASONING}\n</think>\n\nLet me look.<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function"
        '<｜tool▁sep｜>get_weather\n```json\n{"city": "Paris"}\n```<｜tool▁call▁end｜>\n'
        "<｜tool▁call▁begin｜>function<｜tool▁sep｜>get_time\n```json\n"
        '{"city": "Paris", "h24": true}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>'
        "<｜end▁of▁sentence｜>", False,
        "Let me look.", f"{REASONING}\n",
        [("get_weather", {"city": "Paris"}), ("get_time", {"city": "Paris", "h24": True})],
        id="deepseek-r1-parallel-fenced-calls",
    ),
    pytest.param(
        DeepSeekParser(family="deepseek-r1", fenced_calls=True, closing_ends_reasoning=True),
        f"<think>\n{REASONING}\n</think>\n\nSunny.<｜end▁of▁sentence｜>", False,
        "\n\nSunny.", f"\n{REASONING}\n", [], id="deepseek-r1-0528-writes-its-think",
    ),
    pytest.param(
        DeepSeekParser(family="deepseek-r1", fenced_calls=True, closing_ends_reasoning=True),
        "Sunny.<｜end▁of▁sentence｜>", False, "Sunny.", None, [], id="deepseek-v3-answer",
    ),
    pytest.param(
        DeepSeekParser(family="deepseek-r1", fenced_calls=True, closing_ends_reasoning=True),
        f"<think>\n{REASONING}", False, "", f"\n{REASONING}", [],
        id="deepseek-r1-0528-cut-in-reasoning",
    ),
    pytest.param(
        GptOssParser(),
        f"<|channel|>analysis<|message|>{REASONING}<|end|><|start|>assistant to=functions.get_time"
        '<|channel|>commentary json<|message|>{"city": "Paris"}<|call|>', False,
        "", REASONING, [("get_time", {"city": "Paris"})], id="gpt-oss-template-call-header",
    ),
    pytest.param(
        GptOssParser(),
        f"<|channel|>analysis<|message|>{REASONING}<|end|><|start|>assistant<|channel|>final"
        "<|message|>Sunny.<|return|>", False,
        "Sunny.", REASONING, [], id="gpt-oss-final-returns",
    ),
    pytest.param(
        GptOssParser(),
        f"{REASONING}<|end|><|start|>assistant<|channel|>final<|message|>Sunny.<|return|>", True,
        "Sunny.", REASONING, [], id="gpt-oss-prompt-opened-analysis",
    ),
    pytest.param(
        GptOssParser(), "Sunny.<|return|>", False,
        "Sunny.", None, [], id="gpt-oss-prompt-opened-final",
    ),
    pytest.param(
        GptOssParser(),
        "<|channel|>analysis<|message|>Thinking<|end|><|start|>assistant<|channel|>commentary "
        "to=functions.get_weather <|constrain|>json", False,
        "", "Thinking", [("get_weather", None)], id="gpt-oss-cut-in-a-call-header",
    ),
    pytest.param(
        Llama3Parser(),
        '<|python_tag|>brave_search.call(query="Paris, weather")<|eom_id|>', False,
        "", None, [("brave_search", {"query": "Paris, weather"})], id="llama-3.1-builtin-tool",
    ),
    pytest.param(
        Llama3Parser(),
        '{"name": "get_weather", "parameters": {"city": "Paris"}}; '
        '{"name": "get_time", "parameters": {"city": "Paris"}}<|eot_id|>', False,
        "", None, [("get_weather", {"city": "Paris"}), ("get_time", {"city": "Paris"})],
        id="llama-3.1-semicolon-calls",
    ),
    pytest.param(
        Llama3Parser(), '{"answer": 4}<|eot_id|>', False,
        '{"answer": 4}', None, [], id="llama-3.1-json-answer-calls-nothing",
    ),
    pytest.param(
        Qwen3Parser(),
        f"<think>\n{REASONING}\n<tool_call>\n"
        '{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call><|im_end|>', False,
        "", f"\n{REASONING}\n", [("get_weather", {"city": "Paris"})],
        id="qwen3-call-ends-unclosed-reasoning",
    ),
    pytest.param(
        KimiParser(),
        f"{REASONING}<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0"
        '<|tool_call_argument_begin|>{"city": "Paris"}<|tool_call_end|>'
        "<|tool_calls_section_end|><|im_end|>", True,
        "", REASONING, [("get_weather", {"city": "Paris"})],
        id="kimi-call-ends-unclosed-reasoning",
    ),
    pytest.param(
        KimiParser(), "</think>Sunny.<|im_end|>", True,
        "Sunny.", None, [], id="kimi-empty-reasoning-is-none",
    ),
    pytest.param(
        Qwen3Parser(), f"<think>\n{REASONING} and so on", False,
        "", f"\n{REASONING} and so on", [], id="qwen3-cut-by-the-length-limit",
    ),
]  # fmt: skip


@pytest.mark.parametrize(("parser", "text", "started", "content", "reasoning", "calls"), WRITTEN)
def test_a_reply_as_the_family_writes_it(parser, text, started, content, reasoning, calls):
    reply = parser.parse(text, started_in_reasoning=started)
    assert (reply.content, reply.reasoning) == (content, reasoning)
    assert [(c.name, c.arguments) for c in reply.tool_calls] == calls


MALFORMED = [
    pytest.param(
        Qwen3Parser(), '<tool_call>\n{"name": "get_weather", "arguments": {"city": Paris}}\n'
        "</tool_call>", "get_weather", id="qwen3",
    ),
    pytest.param(
        KimiParser(), "<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0"
        "<|tool_call_argument_begin|>{city: Paris}<|tool_call_end|><|tool_calls_section_end|>",
        "get_weather", id="kimi",
    ),
    pytest.param(
        DeepSeekParser(), "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>"
        '{"city": "Par<｜tool▁call▁end｜><｜tool▁calls▁end｜>', "get_weather", id="deepseek-v3.1",
    ),
    pytest.param(
        GptOssParser(), "<|channel|>commentary to=functions.get_weather <|constrain|>json"
        "<|message|>{'city': 'Paris'}<|call|>", "get_weather", id="gpt-oss",
    ),
    pytest.param(
        KimiParser(), "Let me check.<|tool_calls_section_begin|><|tool_calls_section_end|>", "",
        id="kimi-empty-section",
    ),
    pytest.param(
        DeepSeekParser(), "Let me check.<｜tool▁calls▁begin｜><｜tool▁calls▁end｜>", "",
        id="deepseek-v3.1-empty-section",
    ),
    pytest.param(
        Llama3Parser(), '<|python_tag|>brave_search.call(query="a\\q")<|eom_id|>',
        "brave_search", id="llama-3.1-builtin-bad-escape",
    ),
    pytest.param(
        Llama3Parser(), '{"name": "get_weather", "parameters": {"city": "Paris"<|eot_id|>',
        "get_weather", id="llama-3.1",
    ),
]  # fmt: skip


@pytest.mark.parametrize(("parser", "text", "name"), MALFORMED)
def test_malformed_call_json_is_kept_as_a_diverged_call(parser, text, name):
    reply = parser.parse(text)
    [call] = reply.tool_calls
    assert (call.name, call.arguments) == (name, None) and call.raw
    expected = [ToolCall("get_weather", {"city": "Paris"})]
    assert compare_calls(reply.tool_calls, expected) == "tool_call_diverged"
    assert reply.as_message()["tool_calls"][0]["function"]["arguments"] == call.raw


@pytest.mark.parametrize(("parser", "text", "started"), [p.values[:3] for p in WRITTEN])
def test_a_reply_cut_anywhere_parses_without_an_error(parser, text, started):
    """The length limit can cut a reply at any point: every prefix parses, with never more
    calls than the whole reply, and a call cut inside its arguments is kept (malformed)."""
    whole = parser.parse(text, started_in_reasoning=started).tool_calls
    for end in range(len(text) + 1):
        calls = parser.parse(text[:end], started_in_reasoning=started).tool_calls
        assert compare_calls(calls, whole) != "extra_tool_call", text[:end]
    if whole:
        cut = text.rindex(whole[-1].raw[:-1]) + len(whole[-1].raw) - 1
        calls = parser.parse(text[:cut], started_in_reasoning=started).tool_calls
        assert len(calls) == len(whole) and calls[-1].malformed


@pytest.mark.parametrize(
    ("family", "kwargs", "opens"),
    [
        ("kimi-k2.5", {"thinking": True}, True),
        ("kimi-k2.5", {"thinking": False}, False),  # `<think></think>`
        ("qwen3", {}, False),  # the model writes `<think>`
        ("qwen3", {"enable_thinking": False}, False),  # `<think>\n\n</think>\n\n`
        ("deepseek-v3.1", {"thinking": True}, True),
        ("deepseek-v3.1", {"thinking": False}, False),
        ("deepseek-r1", {}, True),  # `<｜Assistant｜><think>\n`
        ("deepseek-r1-0528", {}, False),  # `<｜Assistant｜>`: the model writes `<think>`
        ("gpt-oss", {}, False),
        ("llama-3.1", {}, False),
    ],
)
def test_whether_a_prompt_opened_the_reasoning(family_tokenizer_dir, family, kwargs, opens):
    tok = tokenizer(family_tokenizer_dir, family)
    ids = tok.apply_chat_template(
        HISTORY, add_generation_prompt=True, tokenize=True, return_dict=False, **kwargs
    )
    prompt = tok.decode(list(ids), skip_special_tokens=False)
    assert reply_parser_for_tokenizer(tok).prompt_opens_reasoning(prompt) is opens


@pytest.mark.parametrize(
    ("family", "parser_family"),
    [
        ("qwen3", "qwen3"),
        ("deepseek-v3.1", "deepseek-v3.1"),
        ("deepseek-v3.1-no-tools", "deepseek-v3.1"),
        ("deepseek-r1", "deepseek-r1"),
        ("deepseek-r1-0528", "deepseek-r1"),
        ("gpt-oss", "gpt-oss"),
        ("llama-3.1", "llama-3.1"),
        ("kimi-k2.5", "kimi-k2"),
    ],
)
def test_each_fixture_familys_parser_is_detected(family_tokenizer_dir, family, parser_family):
    assert reply_parser_for_tokenizer(tokenizer(family_tokenizer_dir, family)).family == (
        parser_family
    )


def test_the_kimi_like_test_template_is_kimi():
    assert reply_parser_for(KIMI_LIKE, list(SPECIALS)).family == "kimi-k2"


def test_an_unknown_family_is_refused_naming_the_model():
    template = "{% for m in messages %}### {{ m.role }}: {{ m.content }}\n{% endfor %}### reply:"
    with pytest.raises(UnknownReplyFamily, match="spec.model.tokenizer") as caught:
        reply_parser_for(template, ["<s>", "</s>"], model="spec.model.tokenizer")
    assert caught.value.exit_code == 2 and "history: dataset" in caught.value.fix
