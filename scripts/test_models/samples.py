"""The sample conversation (a tool call and its result) the test models are checked with, and
its tools: also the tools of the real-server tests' prompts. No imports: the draftgen venv's
tests read it as well as the SGLang venv's builder."""

from __future__ import annotations

from typing import Any

SAMPLE_TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Get the current weather for a city.",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string", "description": "Name of the city"},
                    "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
                },
                "required": ["city"],
            },
        },
    }
]
SAMPLE_MESSAGES: list[dict[str, Any]] = [
    {"role": "user", "content": "What is the weather in Paris?"},
    {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {
                "id": "functions.get_weather:0",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "functions.get_weather:0", "content": '{"temp": 21}'},
    {"role": "user", "content": "Thanks! And in Berlin?"},
]


def sample_prompt(tok, tokenize: bool = True, tools: list | None = SAMPLE_TOOLS, **template_kwargs):
    """SAMPLE_MESSAGES through `tok`'s chat template with a generation prompt: ids, or the text."""
    as_ids = {"return_dict": False} if tokenize else {}
    return tok.apply_chat_template(
        SAMPLE_MESSAGES,
        tools=tools,
        add_generation_prompt=True,
        tokenize=tokenize,
        **as_ids,
        **template_kwargs,
    )
