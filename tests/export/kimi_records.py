"""Records built with the real tiny-kimi tokenizer (Kimi-K2 special-token ids, its chat
template), as the generator writes them: shared by the export tests (fixtures in conftest.py)."""

from __future__ import annotations

from .builders import record

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Current weather in a city",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        },
    }
]


def prompt(tokenizer, messages, tools=None, **kwargs):
    out = tokenizer.apply_chat_template(
        messages, tools=tools, add_generation_prompt=True, tokenize=True, **kwargs
    )
    return list(out["input_ids"] if isinstance(out, dict) or hasattr(out, "keys") else out)


def completion(tokenizer, text):
    return tokenizer.encode(text, add_special_tokens=False)


def kimi_records(kimi) -> list[dict]:
    """Records as the generator writes them: a tool call, a plain answer, a truncated one."""
    plain = [{"role": "user", "content": "What is 2 + 4? Answer with ünïcödé 😀"}]
    tool_turn = [
        {"role": "system", "content": "You are Kimi."},
        {"role": "user", "content": "Weather in Paris?"},
    ]
    multi = [
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hello!"},
        {"role": "user", "content": "Tell me about the fox."},
    ]
    return [
        record(
            "chat",
            0,
            prompt(kimi, plain, thinking=True),
            completion(kimi, "Two plus four is six.</think>The answer is 6 😀<|im_end|>"),
        ),
        record(
            "chat",
            1,
            prompt(kimi, tool_turn, tools=TOOLS, thinking=True),
            completion(
                kimi,
                "The user wants weather.</think><|tool_calls_section_begin|><|tool_call_begin|>"
                'functions.get_weather:0<|tool_call_argument_begin|>{"city": "Paris"}'
                "<|tool_call_end|><|tool_calls_section_end|><|im_end|>",
            ),
        ),
        record(
            "chat",
            2,
            prompt(kimi, multi, thinking=True),
            completion(kimi, "The quick brown fox jumps over"),
            finish="length",
            turn=1,
        ),
    ]
