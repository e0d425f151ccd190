"""What a reply parser gives back: the assistant message a production server would have returned
for the ids the target generated (content, reasoning, tool calls), and how a generated call set
compares with the dataset's (`compare_calls`)."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

CallMatch = Literal[
    "match", "tool_call_diverged", "no_tool_call", "extra_tool_call", "missing_tool_call"
]

# How a family's server names the calls it returns: Kimi-K2's templates print the id
# (`functions.NAME:N`, N counting every call of the conversation), the others get a uuid from
# SGLang that no template prints, so a deterministic `call_N` stands in for it.
CallIdStyle = Literal["call", "kimi"]


@dataclass(frozen=True)
class ToolCall:
    """One call: the function's name and its arguments as a JSON value (parsed), `None` when
    they were not valid JSON; `raw` keeps the text as generated: the arguments where the format
    sets them apart (Kimi, DeepSeek, gpt-oss, Llama's built-in calls), else the call's whole
    JSON object (Qwen3, Llama's JSON calls)."""

    name: str
    arguments: Any
    raw: str = ""

    @property
    def malformed(self) -> bool:
        return self.arguments is None


@dataclass(frozen=True)
class Reply:
    """An assistant reply parsed by its family's rules. `reasoning` is `None` when the reply had
    none (SGLang reports `reasoning_content: null` then); `call_id_style` is how the family's
    server names the calls (`call_ids`)."""

    content: str
    reasoning: str | None
    tool_calls: tuple[ToolCall, ...] = ()
    call_id_style: CallIdStyle = "call"

    def call_ids(self, history_calls: int = 0) -> tuple[str, ...]:
        """The ids a production server gives this reply's calls; `history_calls` is the number of
        tool calls in the conversation before it (SGLang's history count, which Kimi's ids carry)."""
        n = history_calls
        if self.call_id_style == "kimi":
            return tuple(f"functions.{c.name}:{n + i}" for i, c in enumerate(self.tool_calls))
        return tuple(f"call_{n + i}" for i in range(len(self.tool_calls)))

    def as_message(
        self, history_calls: int = 0, reasoning_key: str = "reasoning_content"
    ) -> dict[str, Any]:
        """The OpenAI assistant message a client sends back: role, content, the reasoning under
        `reasoning_key` (when there is reasoning; gpt-oss templates read `thinking`) and
        `tool_calls` [{id, type: function, function: {name, arguments}}] with the arguments as
        the JSON text (re-serialised when parsed, the raw text when malformed)."""
        message: dict[str, Any] = {"role": "assistant", "content": self.content}
        if self.reasoning is not None:
            message[reasoning_key] = self.reasoning
        if self.tool_calls:
            ids = self.call_ids(history_calls)
            message["tool_calls"] = [
                {
                    "id": call_id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": arguments_text(call)},
                }
                for call_id, call in zip(ids, self.tool_calls, strict=True)
            ]
        return message


def arguments_text(call: ToolCall) -> str:
    """A call's arguments as the JSON text SGLang returns (`json.dumps(..., ensure_ascii=False)`
    of the parsed value), the raw text when it did not parse."""
    if call.arguments is None:
        return call.raw
    return json.dumps(call.arguments, ensure_ascii=False)


class ReplyParser(Protocol):
    """A family's reading of generated text (the tokenizer's decode of the output ids with the
    special tokens kept)."""

    @property
    def family(self) -> str:
        """The family's name (e.g. `qwen3`), for logs and records."""
        ...

    def parse(self, text: str, *, started_in_reasoning: bool = False) -> Reply:
        """The reply in `text`; `started_in_reasoning` when the prompt already opened the
        reasoning (it ended with the family's opening tag, e.g. `<think>`), so the text starts
        inside it without the tag. Never raises: malformed calls come back with
        `arguments=None`."""
        ...

    def prompt_opens_reasoning(self, prompt_text: str) -> bool:
        """Whether a prompt (its decoded text) ends inside the reasoning: the value to pass as
        `started_in_reasoning` for the reply generated after it."""
        ...


def parse_arguments(text: str) -> Any:
    """Arguments' text as a JSON value, `None` when it is not JSON (a malformed call)."""
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None


def calls_of_message(message: Mapping[str, Any]) -> tuple[ToolCall, ...]:
    """A dataset's assistant message's `tool_calls` as `ToolCall`s (arguments given as a JSON
    string or as a value), for `compare_calls`."""
    out = []
    for call in message.get("tool_calls") or ():
        fn = call.get("function", call) if isinstance(call, Mapping) else {}
        name = fn.get("name", "") if isinstance(fn, Mapping) else ""
        args = fn.get("arguments") if isinstance(fn, Mapping) else None
        if isinstance(args, str):
            out.append(ToolCall(str(name), parse_arguments(args), args))
        else:
            out.append(ToolCall(str(name), args, json.dumps(args, ensure_ascii=False)))
    return tuple(out)


def json_equal(a: Any, b: Any) -> bool:
    """Equal as JSON values: objects regardless of key order, arrays in order, numbers by value
    (1 == 1.0), but `true` is not `1` and `null` is not `0` (Python's `==` says they are)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        if isinstance(a, float) and math.isnan(a):
            return False
        return a == b
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    if a is None or b is None:
        return a is None and b is None
    return type(a) is type(b) and a == b


def compare_calls(generated: Sequence[ToolCall], expected: Sequence[ToolCall]) -> CallMatch:
    """How the generated calls stand to the dataset's: `match` when the same functions are called
    in the same order with arguments equal as JSON values. Otherwise `no_tool_call` (the dataset
    called, the reply did not), `extra_tool_call` (the reply called where the dataset did not,
    or more calls), `missing_tool_call` (fewer calls), `tool_call_diverged` (a call in common
    differs, or its arguments are not JSON)."""
    if not generated and not expected:
        return "match"
    if not generated:
        return "no_tool_call"
    if not expected:
        return "extra_tool_call"
    for got, want in zip(generated, expected, strict=False):
        if got.name != want.name or got.malformed or want.malformed:
            return "tool_call_diverged"
        if not json_equal(got.arguments, want.arguments):
            return "tool_call_diverged"
    if len(generated) > len(expected):
        return "extra_tool_call"
    if len(generated) < len(expected):
        return "missing_tool_call"
    return "match"


def rename_tool_results(
    messages: Sequence[Mapping[str, Any]], ids: Mapping[str, str]
) -> list[dict[str, Any]]:
    """`messages` with each tool result's `tool_call_id` mapped through `ids` (the dataset's call
    id -> the id the server gave the matching generated call, `Reply.call_ids`), as a client
    answers the calls the server returned; other messages unchanged. Kimi's templates print both
    ids (`<|tool_call_begin|>ID`, `## Return of ID`), so a chain that keeps the dataset's ids
    renders a prompt production would not."""
    out = []
    for message in messages:
        call_id = message.get("tool_call_id")
        if message.get("role") == "tool" and isinstance(call_id, str) and call_id in ids:
            out.append({**message, "tool_call_id": ids[call_id]})
        else:
            out.append(dict(message))
    return out
