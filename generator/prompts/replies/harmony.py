"""gpt-oss's reply parser: the harmony format's channels, as SGLang reads them
(`--reasoning-parser gpt-oss`, `--tool-call-parser gpt-oss`, both on its `HarmonyParser`).

The prompt ends with `<|start|>assistant`, so the reply is a run of messages, the first without
its `<|start|>assistant`: each a header (`<|channel|>CHANNEL`, an optional recipient
`to=functions.NAME` before or after the channel, an optional `<|constrain|>json` or bare `json`)
then `<|message|>BODY` closed by `<|end|>`, `<|call|>` or `<|return|>`.
- `analysis` closed by `<|end|>` is reasoning (several are joined); cut off by the length limit,
  what was written is reasoning too.
- a message closed by `<|call|>` is a tool call of its recipient (`functions.` dropped; a
  built-in tool such as `browser.search` keeps its full name); the body is the JSON arguments.
- `final`, and `commentary` closed by `<|end|>` (a preamble to calls), are content: joined with
  '' when the reply called nothing, with ' ' and stripped when it did (SGLang's two parsers).
  `final` runs to `<|return|>` (the model's stop token), markers inside it included; the others
  end at `<|end|>` or `<|call|>`.
SGLang's call pattern wants `<|constrain|>json` after the recipient; the header the published
template writes (`<|start|>assistant to=functions.NAME<|channel|>commentary json<|message|>`)
lacks it, so both are read here (docs/models.md)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from .model import Reply, ToolCall, parse_arguments
from .reasoning import strip_end

_CLOSERS = ("<|end|>", "<|call|>", "<|return|>")
_RECIPIENT = re.compile(r"to=([^\s<]+)")
_CHANNEL = re.compile(r"<\|channel\|>\s*(\w+)")


@dataclass(frozen=True)
class _Message:
    header: str
    body: str
    closer: str  # one of _CLOSERS; '' when the text ended first or for plain text

    @property
    def channel(self) -> str:
        found = _CHANNEL.search(self.header)
        return found.group(1).lower() if found else ""

    @property
    def recipient(self) -> str:
        found = _RECIPIENT.search(self.header)
        return found.group(1) if found else ""


def _first_closer(text: str, start: int, closers: tuple[str, ...] = _CLOSERS) -> tuple[int, str]:
    """Where the first of `closers` after `start` is and which (`(len(text), "")` when none)."""
    found = [(text.find(c, start), c) for c in closers if c in text[start:]]
    return min(found, default=(len(text), ""))


def _closers(header: str) -> tuple[str, ...]:
    """What ends a message with this header (SGLang's rule): `final` only `<|return|>` (or the
    end of the text: the model's stop token), `analysis` and `commentary` `<|end|>` or
    `<|call|>`."""
    found = _CHANNEL.search(header)
    channel = found.group(1).lower() if found else ""
    if channel == "final":
        return ("<|return|>",)
    if channel in ("analysis", "commentary"):
        return ("<|end|>", "<|call|>")
    return _CLOSERS


def _messages(text: str) -> list[_Message]:
    """The harmony messages of `text` in order. Text closed before any header (the body of a
    message the prompt opened) and plain text (a reply without markers, text after
    `<|return|>`) come as messages with no header."""
    out: list[_Message] = []
    at = 0
    while at < len(text):
        opens = text.find("<|message|>", at)
        end, closer = _first_closer(text, at)
        if opens == -1 and not closer:
            # the text ended in a header: an unfinished call is kept (malformed), any other
            # header dropped
            rest = text[at:]
            cut = min((rest.find(m) for m in ("<|start|>", "<|channel|>") if m in rest), default=-1)
            if cut == -1:
                out.append(_Message("", rest, ""))
            else:
                out.append(_Message("", rest[:cut], ""))
                if _RECIPIENT.search(rest[cut:]):
                    out.append(_Message(rest[cut:], "", ""))
            break
        if opens == -1 or end < opens:
            out.append(_Message("", text[at:end], closer))
            at = end + len(closer)
            continue
        header = text[at:opens]
        cuts = [header.find(m) for m in ("<|start|>", "<|channel|>") if m in header]
        if at == 0 and header.lstrip().startswith("to="):
            cuts.append(0)
        cut = min(cuts, default=len(header))
        if header[:cut]:
            out.append(_Message("", header[:cut], ""))
        body_start = opens + len("<|message|>")
        end, closer = _first_closer(text, body_start, _closers(header[cut:]))
        out.append(_Message(header[cut:], text[body_start:end], closer))
        at = end + len(closer)
    return out


@dataclass(frozen=True)
class GptOssParser:
    """gpt-oss (harmony); see the module's docstring for the rules."""

    family: str = "gpt-oss"
    end_tokens: tuple[str, ...] = ("<|endoftext|>",)

    def parse(self, text: str, *, started_in_reasoning: bool = False) -> Reply:
        messages = _messages(strip_end(text, self.end_tokens))
        if started_in_reasoning and messages and not messages[0].header:
            # the prompt ended with `<|channel|>analysis<|message|>`: the text starts in its body
            messages[0] = _Message("<|channel|>analysis", messages[0].body, messages[0].closer)
        reasoning: list[str] = []
        content: list[str] = []
        calls: list[ToolCall] = []
        for m in messages:
            if m.recipient and m.closer in ("<|call|>", ""):
                name = m.recipient.removeprefix("functions.")
                body = m.body.strip()
                args = parse_arguments(body) if m.closer else None
                calls.append(ToolCall(name, args, body))
            elif m.channel == "analysis":
                reasoning.append(m.body)
            else:  # final, commentary closed by <|end|>, plain text
                content.append(m.body)
        text_out = " ".join(content).strip() if calls else "".join(content)
        return Reply(text_out, "".join(reasoning) or None, tuple(calls))

    def prompt_opens_reasoning(self, prompt_text: str) -> bool:
        return prompt_text.endswith("<|channel|>analysis<|message|>")
