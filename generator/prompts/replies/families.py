"""The `<think>` families' reply parsers — Kimi-K2/K2.5, Qwen3, DeepSeek-V3.1 and R1 — and
Llama-3.1's, each following the SGLang reasoning parser and function-call detector production
runs for it (named on each class); docs/models.md has the rules in a table. Where SGLang drops
what it cannot parse, these keep it as a malformed call (`arguments=None`) so the chain sees a
divergence instead of a reply that silently called nothing."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from .model import Reply, ToolCall, parse_arguments
from .reasoning import ends_with_open, split_reasoning, strip_end

_NAME_IN_JSON = re.compile(r'"name"\s*:\s*"((?:[^"\\]|\\.)*)"')


def _name_from_broken_json(text: str) -> str:
    found = _NAME_IN_JSON.search(text)
    return found.group(1) if found else ""


@dataclass(frozen=True)
class KimiParser:
    """Kimi-K2 / K2.5 (SGLang `--reasoning-parser kimi_k2`, `--tool-call-parser kimi_k2`):
    `<think>…</think>`, a call section `<|tool_calls_section_begin|>` of
    `<|tool_call_begin|>functions.NAME:IDX<|tool_call_argument_begin|>{json}<|tool_call_end|>`;
    the content is the text before the section (not stripped); a section opened inside the
    reasoning ends it. Ids are `functions.NAME:N` over the conversation's calls."""

    family: str = "kimi-k2"
    end_tokens: tuple[str, ...] = ("<|im_end|>", "[EOS]", "[EOT]")

    SECTION = "<|tool_calls_section_begin|>"
    _CALL = re.compile(
        r"<\|tool_call_begin\|>\s*(?P<id>[^\s<|]*)\s*<\|tool_call_argument_begin\|>"
        r"(?P<args>.*?)(?P<end><\|tool_call_end\|>|(?=<\|tool_call_begin\|>)|<\|tool_calls_section_end\|>|$)",
        re.DOTALL,
    )
    _ID = re.compile(r"^(?:functions\.)?(?P<name>[\w.\-]+):(?P<index>\d+)$")

    def parse(self, text: str, *, started_in_reasoning: bool = False) -> Reply:
        split = split_reasoning(
            strip_end(text, self.end_tokens), started=started_in_reasoning, tool_start=self.SECTION
        )
        content, section, calls_text = split.rest.partition(self.SECTION)
        calls = []
        for found in self._CALL.finditer(calls_text) if section else ():
            call_id, args = found.group("id"), found.group("args").strip()
            named = self._ID.match(call_id)
            # A bare counter id (`3`) names no function: SGLang guesses it from the tools'
            # schemas; kept here with no name, so it cannot match the dataset's call.
            # A call not closed by its end token (cut off) is malformed whatever it holds.
            closed = found.group("end") == "<|tool_call_end|>"
            calls.append(
                ToolCall(
                    named.group("name") if named else "",
                    parse_arguments(args) if closed else None,
                    args,
                )
            )
        if section and not calls:  # a section opened but no call in it: one malformed call
            calls.append(ToolCall("", None, calls_text))
        return Reply(content, split.reasoning, tuple(calls), call_id_style="kimi")

    def prompt_opens_reasoning(self, prompt_text: str) -> bool:
        return ends_with_open(prompt_text)


@dataclass(frozen=True)
class Qwen3Parser:
    """Qwen3 (SGLang `--reasoning-parser qwen3`, `--tool-call-parser qwen25`): `<think>…</think>`,
    calls `<tool_call>\\n{"name": …, "arguments": …}\\n</tool_call>`; with calls, the content is
    the text before the first one, stripped; a `<tool_call>` inside unclosed reasoning ends it."""

    family: str = "qwen3"
    end_tokens: tuple[str, ...] = ("<|im_end|>", "<|endoftext|>")

    OPEN = "<tool_call>"
    _CALL = re.compile(r"<tool_call>(.*?)(</tool_call>|(?=<tool_call>)|$)", re.DOTALL)

    def parse(self, text: str, *, started_in_reasoning: bool = False) -> Reply:
        split = split_reasoning(
            strip_end(text, self.end_tokens), started=started_in_reasoning, tool_start=self.OPEN
        )
        if self.OPEN not in split.rest:
            return Reply(split.rest, split.reasoning)
        content = split.rest[: split.rest.index(self.OPEN)].strip()
        calls = tuple(
            _json_call(m.group(1), closed=bool(m.group(2))) for m in self._CALL.finditer(split.rest)
        )
        return Reply(content, split.reasoning, calls)

    def prompt_opens_reasoning(self, prompt_text: str) -> bool:
        return ends_with_open(prompt_text)


def _json_call(block: str, closed: bool = True) -> ToolCall:
    """A `{"name": …, "arguments": …}` call (SGLang's `parse_base_json` reads `parameters` too);
    its raw text is the whole object as generated (the format does not set the arguments apart).
    Malformed when not `closed` by its end tag (cut off)."""
    block = block.strip()
    parsed = parse_arguments(block) if closed else None
    if not isinstance(parsed, dict) or not isinstance(parsed.get("name"), str):
        return ToolCall(_name_from_broken_json(block), None, block)
    args: Any = parsed.get("parameters") or parsed.get("arguments", {})  # SGLang's order
    return ToolCall(parsed["name"], args, block)


@dataclass(frozen=True)
class DeepSeekParser:
    """DeepSeek-V3.1 (SGLang `--reasoning-parser deepseek-v3`, `--tool-call-parser deepseekv31`)
    and R1 / R1-0528 / V3 (`deepseek-r1`, `deepseekv3`). Reasoning ends at `</think>`. With
    `closing_ends_reasoning` (R1's rule) the text before a `</think>` is reasoning even with no
    opening tag; SGLang's R1 parser goes further and takes a reply with neither tag for reasoning
    cut off, but R1 and V3 share the template form and the vocabulary, so draftgen cannot tell
    them apart and reads such a reply as content (R1-0528 writes `<think>` first, the first R1's
    prompt ends with it: both are read as reasoning). Calls sit in
    `<｜tool▁calls▁begin｜>…<｜tool▁calls▁end｜>`, each `<｜tool▁call▁begin｜>NAME<｜tool▁sep｜>ARGS
    <｜tool▁call▁end｜>` (V3.1) or `<｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME\\n```json\\nARGS
    \\n```<｜tool▁call▁end｜>` (R1, V3); with calls, the content is the text before them, stripped."""

    family: str = "deepseek-v3.1"
    fenced_calls: bool = False
    closing_ends_reasoning: bool = False
    end_tokens: tuple[str, ...] = ("<｜end▁of▁sentence｜>",)

    SECTION = "<｜tool▁calls▁begin｜>"
    _CALL = re.compile(
        r"<｜tool▁call▁begin｜>(?P<head>.*?)<｜tool▁sep｜>(?P<body>.*?)"
        r"(?P<end><｜tool▁call▁end｜>|(?=<｜tool▁call▁begin｜>)|<｜tool▁calls▁end｜>|$)",
        re.DOTALL,
    )
    _FENCE = re.compile(r"^(?P<name>[^\n]*)\n```(?:json)?\n(?P<args>.*)\n```\s*$", re.DOTALL)

    def parse(self, text: str, *, started_in_reasoning: bool = False) -> Reply:
        text = strip_end(text, self.end_tokens)
        started = started_in_reasoning or (self.closing_ends_reasoning and "</think>" in text)
        split = split_reasoning(text, started=started)
        if self.SECTION not in split.rest:
            return Reply(split.rest, split.reasoning)
        content, _, section = split.rest.partition(self.SECTION)
        calls = []
        for found in self._CALL.finditer(section):
            head, body = found.group("head"), found.group("body")
            closed = found.group("end") == "<｜tool▁call▁end｜>"  # else cut off: malformed
            if not self.fenced_calls:
                calls.append(
                    ToolCall(head.strip(), parse_arguments(body) if closed else None, body)
                )
                continue
            fenced = self._FENCE.match(body)
            if fenced is None or not closed:
                calls.append(ToolCall(body.split("\n", 1)[0].strip(), None, body))
            else:
                args = fenced.group("args")
                calls.append(ToolCall(fenced.group("name").strip(), parse_arguments(args), args))
        if not calls:  # the section opened but no call in it: one malformed call
            calls.append(ToolCall("", None, section))
        return Reply(content.strip(), split.reasoning, tuple(calls))

    def prompt_opens_reasoning(self, prompt_text: str) -> bool:
        return ends_with_open(prompt_text)


@dataclass(frozen=True)
class Llama3Parser:
    """Llama-3.1/3.3 (SGLang `--tool-call-parser llama3`): no reasoning. A reply that starts with
    `{` or holds `<|python_tag|>` holds calls: JSON objects `{"name": …, "parameters": …}` (or
    `arguments`) separated by `;`, the content being the text before `<|python_tag|>`; JSON with
    no `name` (an answer written as JSON) calls nothing and stays the content, as in SGLang. A
    built-in tool's `<|python_tag|>NAME.call(key="value", …)` (Meta's format; SGLang leaves it as
    text) is read as a call of NAME with those arguments."""

    family: str = "llama-3.1"
    end_tokens: tuple[str, ...] = ("<|eot_id|>", "<|eom_id|>", "<|end_of_text|>")

    TAG = "<|python_tag|>"
    _BUILTIN = re.compile(r"^\s*(?P<name>\w+)\.call\((?P<args>.*)\)\s*$", re.DOTALL)
    _KWARG = re.compile(r'\s*(\w+)\s*=\s*"((?:[^"\\]|\\.)*)"\s*(?:,|$)')

    def parse(self, text: str, *, started_in_reasoning: bool = False) -> Reply:
        text = strip_end(text, self.end_tokens)
        tagged = self.TAG in text
        if tagged:
            content, _, action = text.partition(self.TAG)
        elif text.startswith("{"):
            content, action = "", text
        else:
            return Reply(text, None)
        builtin = self._BUILTIN.match(action)
        if builtin is not None:
            return Reply(content, None, (self._builtin_call(builtin),))
        calls, rest = _json_objects(action, tagged)
        if not calls:  # JSON that calls nothing (an answer in JSON): the text as it is
            return Reply(text, None)
        return Reply(content + rest, None, calls)

    def _builtin_call(self, found: re.Match[str]) -> ToolCall:
        """`NAME.call(k="v", …)`: malformed unless the whole argument list is such pairs."""
        raw = found.group("args")
        pairs = self._KWARG.findall(raw)
        values = [parse_arguments(f'"{v}"') for _, v in pairs]
        covered = "".join(m.group(0) for m in self._KWARG.finditer(raw))
        if covered.strip() != raw.strip() or any(v is None for v in values):
            return ToolCall(found.group("name"), None, raw)
        return ToolCall(
            found.group("name"), {k: v for (k, _), v in zip(pairs, values, strict=True)}, raw
        )

    def prompt_opens_reasoning(self, prompt_text: str) -> bool:
        return False


_CALL_START = re.compile(r'\{\s*"name"\s*:')


def _json_objects(action: str, tagged: bool) -> tuple[tuple[ToolCall, ...], str]:
    """Llama's `;`-separated call objects, and the text left after the last one. Where one does
    not parse, it is kept as a malformed call when it starts like one (`{"name":`, or anything
    right after `<|python_tag|>`), else left as text; JSON without a `name` calls nothing (SGLang
    drops it)."""
    decoder = json.JSONDecoder()
    calls: list[ToolCall] = []
    at = 0
    while at < len(action):
        start = len(action) - len(action[at:].lstrip(" \n;"))
        if start >= len(action):
            break
        try:
            obj, end = decoder.raw_decode(action, start)
        except ValueError:
            if _CALL_START.match(action, start) or (tagged and not calls):
                calls.append(_json_call(action[start:]))
                return tuple(calls), ""
            return tuple(calls), action[start:].strip()
        if not (isinstance(obj, dict) and isinstance(obj.get("name"), str)):
            return tuple(calls), action[start:].strip()
        calls.append(_json_call(action[start:end]))
        at = end
    return tuple(calls), ""
