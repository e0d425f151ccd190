"""Row formats → one normalized conversation: OpenAI-style `messages` plus optional `tools`.

Every conversational format (`messages`, `sharegpt`, `glaive`, `prompt`) becomes a
`Conversation` whose messages use the roles `system`, `user`, `assistant`, `tool`, whose assistant
tool calls are `{"id", "type": "function", "function": {"name", "arguments"}}` (arguments as the
row gave them: a JSON string kept byte for byte and only checked, or an object), and whose tools
are OpenAI `{"type": "function", "function": {...}}` definitions: exactly what
`apply_chat_template(messages, tools=...)` expects, so each model declares tools in its own
format. The reasoning of an assistant turn is carried under the key it was given
(`reasoning`, `reasoning_content` or `thinking`: templates read different ones). `pretokenized`
rows become a list of token ids that is never re-templated.

A row that cannot be normalized raises `RowError(reason, detail)`; the caller records a reject.
`Conversation`, `RowError` and the tool pieces live in `conversation` (glaive uses them too);
`parse_conversation` is the one entry point for every conversational format.
"""

from __future__ import annotations

from typing import Any

from draftgen.generator.rows.conversation import (
    Conversation,
    RowError,
    call_id,
    make_tool_call,
    normalize_tools,
    parse_json,
    tool_result,
)
from draftgen.generator.rows.glaive import parse_glaive

ROLES = ("system", "user", "assistant", "tool")
# Other names for those roles: Llama-3's own name for a tool result (its template prints `tool`
# turns as `ipython` too, and other families' templates know only `tool`).
ROLE_ALIASES = {"ipython": "tool"}
# Message keys handed to the chat template; others (dataset bookkeeping) are dropped.
# Reasoning keys, each kept as given: Kimi-K2.5's template reads `reasoning` first, then
# `reasoning_content` (DeepSeek's, Qwen3's key); gpt-oss's reads `thinking`.
REASONING_KEYS = ("reasoning", "reasoning_content", "thinking")
_MESSAGE_KEYS = ("role", "content", *REASONING_KEYS, "tool_calls", "tool_call_id", "name")

# ShareGPT speaker names → roles; `function_call` is an assistant turn that calls tools.
SHAREGPT_ROLES = {
    "system": "system",
    "human": "user",
    "user": "user",
    "gpt": "assistant",
    "assistant": "assistant",
    "chatgpt": "assistant",
    "model": "assistant",
    "bing": "assistant",
    "bard": "assistant",
    "function_call": "function_call",
    "observation": "tool",
    "tool": "tool",
    "ipython": "tool",
    "function": "tool",
    "function_response": "tool",
}


def _normalize_tool_calls(value: Any, where: str, counter: list[int]) -> list[dict[str, Any]]:
    if isinstance(value, dict):
        value = [value]
    if not isinstance(value, list):
        raise RowError("bad_tool_call", f"{where}.tool_calls must be a list")
    calls = []
    for n, call in enumerate(value):
        if not isinstance(call, dict):
            raise RowError("bad_tool_call", f"{where}.tool_calls[{n}] must be an object")
        fn = call.get("function", call)
        if not isinstance(fn, dict):
            raise RowError("bad_tool_call", f"{where}.tool_calls[{n}].function must be an object")
        name = fn.get("name")
        cid = call.get("id")
        if not isinstance(cid, str) or not cid:
            cid = call_id(str(name), counter[0])
        calls.append(make_tool_call(name, fn.get("arguments"), cid, f"{where}.tool_calls[{n}]"))
        counter[0] += 1
    return calls


# ------------------------------------------------------------------------------------ messages


def _content(value: Any, where: str) -> str | list[dict[str, str]] | None:
    """Text content: a string, None, or a list of text parts: one part is its text, several
    stay parts (`[{type: text, text}]`), joined when rendered as SGLang's chat endpoint joins
    them for the template (generator/prompts/content_parts.py)."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, list):
        parts = []
        for part in value:
            if isinstance(part, str):
                parts.append(part)
            elif (
                isinstance(part, dict)
                and part.get("type", "text") == "text"
                and isinstance(part.get("text"), str)
            ):
                parts.append(part["text"])
            else:
                raise RowError("wrong_type", f"{where}.content: only text parts are supported")
        if len(parts) > 1:
            return [{"type": "text", "text": p} for p in parts]
        return parts[0] if parts else ""
    raise RowError("wrong_type", f"{where}.content must be a string, got {type(value).__name__}")


def normalize_message(msg: Any, where: str, counter: list[int]) -> dict[str, Any]:
    """One OpenAI-style message, checked and reduced to the keys chat templates read."""
    if not isinstance(msg, dict):
        raise RowError("wrong_type", f"{where} must be an object, got {type(msg).__name__}")
    role = msg.get("role")
    if role is None:
        raise RowError("missing_field", f"{where} has no role")
    role = ROLE_ALIASES.get(role, role) if isinstance(role, str) else role
    if role not in ROLES:
        raise RowError("unknown_role", f"{where}: role {role!r} is not one of {', '.join(ROLES)}")
    out = {k: msg[k] for k in _MESSAGE_KEYS if msg.get(k) is not None}
    out["role"] = role
    if "content" not in msg and not (role == "assistant" and msg.get("tool_calls")):
        raise RowError("missing_field", f"{where} ({role}) has no content")
    content = _content(msg.get("content"), where)
    if role == "assistant" and msg.get("tool_calls"):
        out["tool_calls"] = _normalize_tool_calls(msg["tool_calls"], where, counter)
        content = content or ""  # a None content renders as the text "None" in many templates
    elif content is None:
        raise RowError("wrong_type", f"{where} ({role}): content is null")
    else:
        out.pop("tool_calls", None)
    out["content"] = content
    for key in ("tool_call_id", "name", *REASONING_KEYS):
        if key in out and not isinstance(out[key], str):
            raise RowError("wrong_type", f"{where}.{key} must be a string")
    return out


def _require_list(data: dict[str, Any], field: str) -> list[Any]:
    if field not in data or data[field] is None:
        raise RowError("missing_field", f"the row has no {field!r} field")
    value = data[field]
    if isinstance(value, str):  # some dumps store the list as a JSON string
        value = parse_json(value, "wrong_type", field)
    if not isinstance(value, list):
        raise RowError("wrong_type", f"{field!r} must be a list, got {type(value).__name__}")
    if not value:
        raise RowError("empty_conversation", f"{field!r} is empty")
    return value


def _check_conversation(messages: list[dict[str, Any]]) -> None:
    if not any(m["role"] != "system" for m in messages):
        raise RowError("empty_conversation", "the conversation has no user, assistant or tool turn")


def parse_messages(data: dict[str, Any]) -> Conversation:
    """OpenAI `{"messages": [...], "tools": [...]}`."""
    raw = _require_list(data, "messages")
    counter = [0]
    messages = [normalize_message(m, f"messages[{n}]", counter) for n, m in enumerate(raw)]
    _check_conversation(messages)
    return Conversation(messages, normalize_tools(data.get("tools")))


def parse_sharegpt(data: dict[str, Any], tool_result_name: str = "none") -> Conversation:
    """ShareGPT `{"conversations": [{"from", "value"}]}` (or `role`/`content` entries), with
    `function_call`/`observation` turns, an optional top-level `system` and `tools`. An
    observation answers the call before it (`tool_call_id`), named as `tool_result_name` says."""
    raw = _require_list(data, "conversations")
    counter = [0]
    messages: list[dict[str, Any]] = []
    system = data.get("system")
    if system is not None and not isinstance(system, str):
        raise RowError("wrong_type", "'system' must be a string")
    if system and system.strip():
        messages.append({"role": "system", "content": system})
    pending: list[dict[str, Any]] = []  # calls not yet answered, for tool_call_id
    for n, turn in enumerate(raw):
        where = f"conversations[{n}]"
        if not isinstance(turn, dict):
            raise RowError("wrong_type", f"{where} must be an object, got {type(turn).__name__}")
        speaker = turn.get("from", turn.get("role"))
        value = turn.get("value", turn.get("content"))
        if speaker is None:
            raise RowError("missing_field", f"{where} has no 'from' (or 'role')")
        if "value" not in turn and "content" not in turn:
            raise RowError("missing_field", f"{where} has no 'value' (or 'content')")
        role = SHAREGPT_ROLES.get(speaker) if isinstance(speaker, str) else None
        if role is None:
            raise RowError(
                "unknown_role",
                f"{where}: speaker {speaker!r} is not one of {', '.join(sorted(SHAREGPT_ROLES))}",
            )
        if role == "function_call":
            payload = parse_json(value, "bad_tool_call", where) if isinstance(value, str) else value
            calls = _normalize_tool_calls(payload, where, counter)
            messages.append({"role": "assistant", "content": "", "tool_calls": calls})
            pending = list(calls)
            continue
        content = _content(value, where)
        if content is None:
            raise RowError("wrong_type", f"{where}: value is null")
        if role == "tool":
            messages.append(
                tool_result(content, pending.pop(0) if pending else None, tool_result_name)
            )
            continue
        msg: dict[str, Any] = {"role": role, "content": content}
        if role == "assistant":
            for key in REASONING_KEYS:
                if turn.get(key) is not None:
                    if not isinstance(turn[key], str):
                        raise RowError("wrong_type", f"{where}.{key} must be a string")
                    msg[key] = turn[key]
        messages.append(msg)
    _check_conversation(messages)
    return Conversation(messages, normalize_tools(data.get("tools")))


def parse_prompt(data: dict[str, Any]) -> Conversation:
    """Plain `{"prompt": "...", "system": "..."}`: one user turn, an optional system turn."""
    prompt = data.get("prompt")
    if prompt is None:
        raise RowError("missing_field", "the row has no 'prompt' field")
    if not isinstance(prompt, str):
        raise RowError("wrong_type", f"'prompt' must be a string, got {type(prompt).__name__}")
    if not prompt.strip():
        raise RowError("empty_conversation", "'prompt' is empty")
    system = data.get("system")
    if system is not None and not isinstance(system, str):
        raise RowError("wrong_type", f"'system' must be a string, got {type(system).__name__}")
    messages = [{"role": "system", "content": system}] if system and system.strip() else []
    messages.append({"role": "user", "content": prompt})
    return Conversation(messages)


def parse_pretokenized(data: dict[str, Any], vocab_size: int) -> list[int]:
    """`{"input_ids": [...]}`: the ids exactly as given, each a non-negative int below the
    tokenizer's vocabulary size."""
    ids = data.get("input_ids")
    if ids is None:
        raise RowError("missing_field", "the row has no 'input_ids' field")
    if not isinstance(ids, list):
        raise RowError(
            "wrong_type", f"'input_ids' must be a list of integers, got {type(ids).__name__}"
        )
    if not ids:
        raise RowError("empty_prompt", "'input_ids' is empty")
    for n, tok in enumerate(ids):
        if type(tok) is not int:  # bool is an int subclass; floats are not token ids
            raise RowError("bad_token_id", f"input_ids[{n}] = {tok!r} is not an integer")
        if not 0 <= tok < vocab_size:
            raise RowError(
                "bad_token_id",
                f"input_ids[{n}] = {tok} is outside the tokenizer's vocabulary [0, {vocab_size})",
            )
    return ids


def parse_conversation(
    fmt: str, data: dict[str, Any], *, tool_result_name: str = "none"
) -> Conversation:
    """A row of a conversational format → its normalized conversation. `tool_result_name`
    (`spec.datasets[].toolResultName`) names the tool results draftgen builds from ShareGPT and
    Glaive turns; OpenAI-format tool messages keep the `name` they have or lack."""
    if fmt == "messages":
        return parse_messages(data)
    if fmt == "sharegpt":
        return parse_sharegpt(data, tool_result_name)
    if fmt == "prompt":
        return parse_prompt(data)
    if fmt == "glaive":
        return parse_glaive(data, tool_result_name)
    raise ValueError(f"format {fmt!r} has no conversation")
