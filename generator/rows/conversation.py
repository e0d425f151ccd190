"""The normalized conversation every row format becomes, and its tool pieces.

A `Conversation` holds OpenAI-style messages and tools; assistant tool calls are
`{"id", "type": "function", "function": {"name", "arguments": ...}}`. The arguments stay as the
row gave them: a JSON string is kept byte for byte (templates print a string argument verbatim,
as production prompts carry it) and parsed only to check it is a JSON object; an object stays an
object. What a format's own rules made draftgen change (Glaive's single-quoted arguments) is
listed in `Conversation.normalized`, which reaches the record's `meta.sample`.
`formats` (messages, sharegpt, prompt) and `glaive` both build on this module; a row that
cannot be normalized raises `RowError(reason, detail)`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import draftgen.safe_json as safe_json
from draftgen.contract.generator_cli import ExitCode
from draftgen.errors import DraftgenError


class RowError(DraftgenError, ValueError):
    """A row cannot become a conversation; `reason` is the reject code."""

    exit_code = ExitCode.INVALID
    fix = "fix the row or its dataset's format (the row is recorded as a reject)"

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail


@dataclass(frozen=True, slots=True)
class Conversation:
    """A normalized conversation, as given in the source (before choosing the turn)."""

    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] | None = None
    normalized: tuple[str, ...] = ()
    """What draftgen changed in the row, by its format's rules (e.g. `glaive_quoted_arguments`)."""


# How a tool result (a `tool` message) that draftgen builds from a ShareGPT or Glaive turn is
# named: `none` leaves `name` out, as OpenAI-format tool messages carry none; `function` sets it
# to the called function's name (templates such as Kimi's then print it in the turn's header).
TOOL_RESULT_NAMES = ("none", "function")


# --------------------------------------------------------------------------------------- tools


def parse_json(value: str, reason: str, what: str) -> Any:
    """`value` parsed as JSON, or a `RowError(reason)` naming `what`."""
    try:
        return safe_json.loads(value)
    except safe_json.JsonLimitError as err:
        raise RowError(reason, f"{what} is not valid JSON: {err.detail}") from None


def normalize_tools(value: Any, where: str = "tools") -> list[dict[str, Any]] | None:
    """Tool definitions in any common shape (a JSON string, one object, a list; OpenAI-wrapped
    `{"type": "function", "function": {...}}` or flat `{"name", "description", "parameters"}`)
    → OpenAI tool definitions, or None when there are none."""
    if value is None:
        return None
    if isinstance(value, str):
        if not value.strip():
            return None
        value = parse_json(value, "bad_tools", where)
    if isinstance(value, dict):
        value = [value]
    if not isinstance(value, list):
        raise RowError(
            "bad_tools", f"{where} must be a list of tool definitions, got {type(value).__name__}"
        )
    tools = []
    for n, tool in enumerate(value):
        if isinstance(tool, str):
            tool = parse_json(tool, "bad_tools", f"{where}[{n}]")
        if not isinstance(tool, dict):
            raise RowError(
                "bad_tools", f"{where}[{n}] must be an object, got {type(tool).__name__}"
            )
        fn = tool.get("function", tool) if tool.get("type", "function") == "function" else None
        if not isinstance(fn, dict):
            raise RowError(
                "bad_tools",
                f"{where}[{n}] is not a function definition (type {tool.get('type')!r})",
            )
        name = fn.get("name")
        if not isinstance(name, str) or not name.strip():
            raise RowError("bad_tools", f"{where}[{n}] has no function name")
        params = fn.get("parameters")
        if params is not None and not isinstance(params, dict):
            raise RowError(
                "bad_tools", f"{where}[{n}] ({name}): parameters must be a JSON schema object"
            )
        desc = fn.get("description")
        if desc is not None and not isinstance(desc, str):
            raise RowError("bad_tools", f"{where}[{n}] ({name}): description must be a string")
        fn = {k: v for k, v in fn.items() if v is not None and k != "type"}
        tools.append({"type": "function", "function": fn})
    return tools or None


def make_tool_call(name: Any, arguments: Any, call_id: str, where: str) -> dict[str, Any]:
    """One assistant tool call in the normalized shape. A JSON-string `arguments` is kept as the
    very string (parsed only to check it is a JSON object), an object as the object; no
    arguments (None or a blank string) become `{}`."""
    if not isinstance(name, str) or not name.strip():
        raise RowError("bad_tool_call", f"{where}: the call has no function name")
    if arguments is None or (isinstance(arguments, str) and not arguments.strip()):
        arguments = {}
    parsed = (
        parse_json(arguments, "bad_tool_call", f"{where}: arguments of {name}")
        if isinstance(arguments, str)
        else arguments
    )
    if not isinstance(parsed, dict):
        raise RowError("bad_tool_call", f"{where}: arguments of {name} must be a JSON object")
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def tool_result(
    content: str | list[dict[str, str]], call: dict[str, Any] | None, naming: str
) -> dict[str, Any]:
    """The `tool` message answering `call` (None: a result with no call before it), named as
    `naming` (one of `TOOL_RESULT_NAMES`) says."""
    msg: dict[str, Any] = {"role": "tool", "content": content}
    if call is not None:
        msg["tool_call_id"] = call["id"]
        if naming == "function":
            msg["name"] = call["function"]["name"]
    return msg


def call_id(name: str, number: int) -> str:
    """Id for a call the source did not name: Kimi-K2's own `functions.<name>:<n>` form, `n`
    counting calls in the conversation (other templates ignore call ids)."""
    return f"functions.{name}:{number}"
