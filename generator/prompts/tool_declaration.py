"""How a tool set is declared in a prompt, and when that declaration is a *fallback*.

Whether a prompt's tools are in it is checked on the rendered text (a substring search; only the
`ids` route decodes), and how they were declared once per distinct tool set (`ToolSetCheck`,
cached by `Renderer.tool_set`): a tokenizer that prints to stdout while rendering tools (Kimi's
"Failed to convert tools to TypeScript style"), or a declaration of another kind than the probe's
(JSON where the model's own syntax is not), is a tool fallback, reported in
`Rendered.tool_fallback`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ToolSetCheck:
    """How one tool set is declared, rendered once with the probe conversation."""

    declaration: str
    """What the tools add to the probe prompt."""
    fallback: str | None
    """Why this declaration is a fallback, or None."""


FALLBACK_STDOUT = "the tokenizer printed while rendering the tools: "
_PRINTED_MAX = 300


def declaration_kind(declaration: str, tools: list[dict]) -> str:
    """`json` when the tools appear as JSON objects (`"name": "<tool>"`), else `native` (the
    model's own syntax, e.g. Kimi's TypeScript-like namespace)."""
    name = tools[0]["function"]["name"]
    return "json" if re.search(r'"name"\s*:\s*"' + re.escape(name) + '"', declaration) else "native"


def declared_part(with_tools: str, without: str) -> str:
    """The part of `with_tools` that `without` lacks (common prefix and suffix removed)."""
    start = 0
    limit = min(len(with_tools), len(without))
    while start < limit and with_tools[start] == without[start]:
        start += 1
    end = 0
    while end < limit - start and with_tools[-1 - end] == without[-1 - end]:
        end += 1
    return with_tools[start : len(with_tools) - end]


def tool_set_key(tools: list[dict]) -> str:
    return json.dumps(tools, sort_keys=True, ensure_ascii=False)


def printed_fallback(printed: str) -> str | None:
    """The fallback reason for what a tokenizer printed while rendering tools; None if nothing."""
    said = " ".join(printed.split())
    if not said:
        return None
    return FALLBACK_STDOUT + (said if len(said) <= _PRINTED_MAX else said[:_PRINTED_MAX] + "…")


def kind_fallback(declaration: str, tools: list[dict], probe_kind: str | None) -> str | None:
    """The fallback reason when `tools` are declared in another kind than the probe tool was."""
    if probe_kind is None:
        return None
    got = declaration_kind(declaration, tools)
    if got == probe_kind:
        return None
    return (
        f"the tools are declared as {got}, the template's own declaration (of the "
        f"probe tool) is {probe_kind}"
    )
