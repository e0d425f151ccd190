"""Glaive function-calling v2 rows → a normalized conversation with OpenAI tools.

A Glaive row is two raw-text fields:

- `system`: `"SYSTEM: You are a helpful assistant with access to the following functions. Use
  them if required -\\n{...}\\n\\n{...}"` — zero, one or several JSON function definitions after
  the preamble (or a `tools` field instead). The definitions become `tools`, so the chat template
  declares them in the model's own format; the preamble stays as the system message.
- `chat`: turns `USER: ...`, `ASSISTANT: ... <|endoftext|>`, `ASSISTANT: <functioncall>
  {"name": "...", "arguments": '{...}'} <|endoftext|>` (arguments usually a single-quoted JSON
  string, which is not JSON), and `FUNCTION RESPONSE: {...}`. Calls become assistant
  `tool_calls`, responses `tool` messages answering the call before them; `<|endoftext|>` is
  stripped (it is Glaive's own end marker, not the target model's).

Single-quoted arguments are normalized to the JSON string between the quotes (kept verbatim,
checked to be a JSON object) and the conversation says so (`normalized` lists
`glaive_quoted_arguments`, recorded in the sample's `meta.sample`); arguments written as a JSON
object stay an object.
"""

from __future__ import annotations

import re
from typing import Any

import draftgen.safe_json as safe_json
from draftgen.generator.rows.conversation import (
    Conversation,
    RowError,
    call_id,
    make_tool_call,
    normalize_tools,
    tool_result,
)

ENDOFTEXT = "<|endoftext|>"
QUOTED_ARGUMENTS = "glaive_quoted_arguments"  # the `Conversation.normalized` entry
FUNCTIONCALL = "<functioncall>"
_TURN = re.compile(r"(?:^|\n)[ \t]*(USER|ASSISTANT|FUNCTION RESPONSE|SYSTEM):[ \t]?")
_ARGS_QUOTED = re.compile(r'"arguments"\s*:\s*\'')
_DEFINITIONS_START = re.compile(r"\[\s*\{|\{")  # a list of definitions, or the first one


def parse_function_definitions(text: str) -> list[Any]:
    """The JSON values that follow one another in `text` (objects or lists of objects),
    separated by whitespace; raises `RowError("bad_tools")` on anything else."""
    found: list[Any] = []
    pos = 0
    while True:
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if pos >= len(text):
            return found
        try:
            value, pos = safe_json.raw_decode(text, pos)
        except safe_json.JsonLimitError as err:
            raise RowError(
                "bad_tools",
                f"function definition #{len(found) + 1} in the system "
                f"prompt is not valid JSON: {err.detail}",
            ) from None
        found.extend(value if isinstance(value, list) else [value])


def split_system(system: str) -> tuple[str, list[Any]]:
    """`SYSTEM: preamble -\\n{...}{...}` → (preamble, raw function definitions)."""
    text = system.strip()
    if text.startswith("SYSTEM:"):
        text = text[len("SYSTEM:") :].strip()
    match = _DEFINITIONS_START.search(text)
    if match is None:
        return text, []
    start = match.start()
    preamble = text[:start].rstrip()
    preamble = preamble[:-1].rstrip() if preamble.endswith("-") else preamble
    return preamble, parse_function_definitions(text[start:])


def parse_function_call(text: str, number: int) -> tuple[dict[str, Any], bool]:
    """`{"name": "f", "arguments": '{"a": 1}'}` (or valid JSON) → (a normalized tool call,
    whether its arguments were single-quoted and so normalized)."""
    text = text.replace(ENDOFTEXT, "").strip()
    quoted = False
    try:
        payload, _ = safe_json.raw_decode(text)
    except safe_json.JsonLimitError:
        payload, quoted = _quoted_arguments_call(text), True
    if not isinstance(payload, dict):
        raise RowError("bad_tool_call", f"<functioncall> is not an object: {text[:200]!r}")
    name = payload.get("name")
    call = make_tool_call(
        name, payload.get("arguments"), call_id(str(name), number), "<functioncall>"
    )
    return call, quoted


def _quoted_arguments_call(text: str) -> dict[str, Any]:
    """Glaive's `"arguments": '{...}'`: the single-quoted part is taken verbatim (it may itself
    contain quotes) up to the last `'` before the closing brace."""
    match = _ARGS_QUOTED.search(text)
    end = text.rstrip().rstrip("}").rstrip().rfind("'")
    if match is None or end < match.end():
        raise RowError("bad_tool_call", f"<functioncall> is not valid JSON: {text[:200]!r}")
    arguments = text[match.end() : end]
    head = text[: match.start()].rstrip().rstrip(",")
    try:
        payload = safe_json.loads(head + "}")
    except safe_json.JsonLimitError:
        raise RowError(
            "bad_tool_call", f"<functioncall> is not valid JSON: {text[:200]!r}"
        ) from None
    payload["arguments"] = arguments
    return payload


def _turns(chat: str) -> list[tuple[str, str]]:
    parts = _TURN.split(chat)
    if parts[0].strip():
        raise RowError(
            "wrong_type", f"'chat' does not start with a USER:/ASSISTANT: turn: {parts[0][:80]!r}"
        )
    return [(parts[i], parts[i + 1]) for i in range(1, len(parts), 2)]


def parse_glaive(data: dict[str, Any], tool_result_name: str = "none") -> Conversation:
    """A Glaive function-calling v2 row → messages + tools; a FUNCTION RESPONSE is named as
    `tool_result_name` says (`conversation.TOOL_RESULT_NAMES`)."""
    system = data.get("system", "")
    chat = data.get("chat")
    if chat is None:
        raise RowError("missing_field", "the row has no 'chat' field")
    if not isinstance(chat, str):
        raise RowError("wrong_type", f"'chat' must be a string, got {type(chat).__name__}")
    if system is None:
        system = ""
    if not isinstance(system, str):
        raise RowError("wrong_type", f"'system' must be a string, got {type(system).__name__}")
    preamble, definitions = split_system(system)
    if data.get("tools") is not None:
        tools = normalize_tools(data["tools"])
    else:
        tools = normalize_tools(definitions, "system prompt functions") if definitions else None

    messages: list[dict[str, Any]] = [{"role": "system", "content": preamble}] if preamble else []
    calls = 0
    quoted = False
    pending: list[dict[str, Any]] = []
    for speaker, body in _turns(chat):
        body = body.replace(ENDOFTEXT, "").strip()
        if speaker == "SYSTEM":
            messages.append({"role": "system", "content": body})
        elif speaker == "USER":
            messages.append({"role": "user", "content": body})
        elif speaker == "ASSISTANT":
            at = body.find(FUNCTIONCALL)
            if at < 0:
                messages.append({"role": "assistant", "content": body})
                continue
            call, was_quoted = parse_function_call(body[at + len(FUNCTIONCALL) :], calls)
            quoted = quoted or was_quoted
            calls += 1
            messages.append(
                {"role": "assistant", "content": body[:at].strip(), "tool_calls": [call]}
            )
            pending = [call]
        else:  # FUNCTION RESPONSE
            if not pending:
                raise RowError(
                    "bad_tool_call", "FUNCTION RESPONSE without a function call before it"
                )
            messages.append(tool_result(body, pending.pop(0), tool_result_name))
    if not any(m["role"] != "system" for m in messages):
        raise RowError("empty_conversation", "'chat' holds no USER/ASSISTANT turn")
    return Conversation(messages, tools, (QUOTED_ARGUMENTS,) if quoted else ())
