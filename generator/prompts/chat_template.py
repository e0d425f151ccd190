"""How a prompt becomes ids, in the main process and in each tokenizer worker alike.

The template is rendered to text (`apply_chat_template(messages, tools=tools or None,
add_generation_prompt=True, tokenize=False, **chatTemplateKwargs)`) and the text encoded without
adding special tokens again — the same render-then-encode path SGLang's own chat endpoint takes
(with `add_special_tokens=False` only when the tokenizer would add any, which keeps Kimi's
tokenizer on its fast path). The start-up probe (`chat_template_probe.py`) decides the route, the
encoder and the form of tool-call arguments; this module applies them to every prompt.

Speed: a batch's texts are encoded in one call to the Rust tokenizer's `encode_batch_fast` (the
same ids as `encode`, without the character offsets nobody reads here: 10-20 % less time than
encoding one text at a time), taken only where the start-up probe shows it gives the ids of the
tokenizer's own `encode`. Rendering is cheap beside encoding (transformers caches the compiled
template; about 40 µs of a 1,300-token prompt's 500 µs).

Tools: how a tool set is declared, and when that is a fallback, is `tool_declaration.py`.
"""

from __future__ import annotations

import io
import json
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import redirect_stdout
from dataclasses import dataclass, field
from typing import Any

from draftgen.generator.prompts import template_clock
from draftgen.generator.prompts.content_parts import ContentFormat, flatten
from draftgen.generator.prompts.integrity import PROBE_MESSAGES, missing_tool_names
from draftgen.generator.prompts.thinking import Variant
from draftgen.generator.prompts.tool_declaration import (
    ToolSetCheck,
    declared_part,
    kind_fallback,
    printed_fallback,
    tool_set_key,
)


@dataclass(frozen=True)
class RenderSettings:
    """Everything a worker needs to render exactly like the main process."""

    location: str
    trust_remote_code: bool
    chat_template_kwargs: dict[str, Any]
    generation_prefix: str | None
    prefix_ids: tuple[int, ...]
    route: str  # "text": render then encode; "ids": apply_chat_template(tokenize=True)
    encode_kwargs: dict[str, Any]
    backend_encode: bool = False  # encode with the Rust tokenizer directly (checked identical)
    batch_encode: bool = False  # ... a batch at a time with `encode_batch_fast` (checked identical)
    string_arguments: bool = True  # tool-call arguments as given (False: parsed into objects)
    declaration_kind: str | None = None  # the probe's tool declaration: "json" or "native"
    variants: dict[str, Variant] = field(default_factory=dict)  # thinking modes (thinking.py)
    template_date: str | None = None  # what `strftime_now` gives (template_clock.py)
    parallel_calls: bool = True  # False: the template renders only a turn's first tool call
    content_format: ContentFormat = (
        "string"  # how list content reaches the template (content_parts.py)
    )


@dataclass(frozen=True, slots=True)
class Rendered:
    """One rendered prompt, or why it failed."""

    ids: list[int] | None
    error: str | None = None
    prefix_ok: bool = True
    missing_tools: list[str] = field(default_factory=list)
    tool_fallback: str | None = None
    """Why the tools are declared in a fallback form (None: in the template's own)."""


TOOL_SET_CACHE = 4096  # distinct tool sets remembered per renderer (Glaive repeats its sets)


def _as_objects(messages: list[dict]) -> list[dict]:
    """`messages` with each tool call's JSON-string arguments parsed (copies; others shared)."""
    out = []
    for m in messages:
        calls = m.get("tool_calls")
        if calls and any(isinstance(c["function"].get("arguments"), str) for c in calls):
            m = {
                **m,
                "tool_calls": [
                    {**c, "function": {**c["function"], "arguments": json.loads(a)}}
                    if isinstance(a := c["function"].get("arguments"), str)
                    else c
                    for c in calls
                ],
            }
        out.append(m)
    return out


def _backend(tokenizer: Any) -> Any:
    """The `tokenizers.Tokenizer` under a fast tokenizer, if any (the Python wrapper around its
    `encode` costs about a fifth of the encoding time)."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    return backend if backend is not None and hasattr(backend, "encode") else None


class Renderer:
    """Messages (+ tools) → prompt ids with one tokenizer, plus the per-sample checks."""

    def __init__(self, tokenizer: Any, settings: RenderSettings) -> None:
        self.tokenizer = tokenizer
        self.settings = settings
        self._backend = _backend(tokenizer) if settings.backend_encode else None
        self._add_special = settings.encode_kwargs.get("add_special_tokens", True)
        self._encode_batch = (
            getattr(self._backend, "encode_batch_fast", None) if settings.batch_encode else None
        )
        self._tool_sets: OrderedDict[str, ToolSetCheck | None] = OrderedDict()
        self._without_tools: str | None = None
        self._dated = (
            template_clock.dated_templates(tokenizer) if settings.template_date is not None else ()
        )
        template_clock.install(self._dated)  # refuses now if the date cannot be pinned

    def _messages(self, messages: list[dict]) -> list[dict]:
        messages = flatten(messages, self.settings.content_format)
        return messages if self.settings.string_arguments else _as_objects(messages)

    def _kwargs(self, mode: str | None) -> dict[str, Any]:
        """The template's keyword arguments: the job's, or a thinking mode's."""
        return (
            self.settings.chat_template_kwargs
            if mode is None
            else self.settings.variants[mode].kwargs
        )

    def text(self, messages: list[dict], tools: list[dict] | None, mode: str | None = None) -> str:
        template_clock.install(self._dated)
        with template_clock.pinned(self.settings.template_date):
            return self.tokenizer.apply_chat_template(
                self._messages(messages),
                tools=tools or None,
                add_generation_prompt=True,
                tokenize=False,
                **self._kwargs(mode),
            )

    def ids_direct(
        self, messages: list[dict], tools: list[dict] | None, mode: str | None = None
    ) -> list[int]:
        template_clock.install(self._dated)
        with template_clock.pinned(self.settings.template_date):
            out = self.tokenizer.apply_chat_template(
                self._messages(messages),
                tools=tools or None,
                add_generation_prompt=True,
                tokenize=True,
                return_dict=False,
                **self._kwargs(mode),
            )
        return list(out)

    def encode(self, text: str) -> list[int]:
        if self._backend is not None:
            return self._backend.encode(text, add_special_tokens=self._add_special).ids
        return list(self.tokenizer.encode(text, **self.settings.encode_kwargs))

    def encode_many(self, texts: list[str]) -> list[list[int]]:
        """The ids of each text, as `encode` gives them, in one call where that is allowed."""
        if self._encode_batch is not None and texts:
            return [e.ids for e in self._encode_batch(texts, add_special_tokens=self._add_special)]
        return [self.encode(t) for t in texts]

    def text_capturing(
        self, messages: list[dict], tools: list[dict] | None, mode: str | None = None
    ) -> tuple[str, str]:
        """`text`, and what the tokenizer printed to stdout meanwhile (only tools make Kimi's
        tokenizer print; without tools stdout is left alone)."""
        if not tools:
            return self.text(messages, tools, mode), ""
        buf = io.StringIO()
        with redirect_stdout(buf):
            text = self.text(messages, tools, mode)
        return text, buf.getvalue()

    def tool_set(self, tools: list[dict]) -> ToolSetCheck | None:
        """How `tools` are declared (cached per distinct tool set); None when the probe
        conversation cannot be rendered with them."""
        key = tool_set_key(tools)
        if key in self._tool_sets:
            self._tool_sets.move_to_end(key)
            return self._tool_sets[key]
        check = self._check_tool_set(tools)
        self._tool_sets[key] = check
        if len(self._tool_sets) > TOOL_SET_CACHE:
            self._tool_sets.popitem(last=False)
        return check

    def _check_tool_set(self, tools: list[dict]) -> ToolSetCheck | None:
        try:
            if self._without_tools is None:
                self._without_tools = self.text(PROBE_MESSAGES, None)
            with_tools, printed = self.text_capturing(PROBE_MESSAGES, tools)
        except Exception:
            return None
        declaration = declared_part(with_tools, self._without_tools)
        fallback = printed_fallback(printed) or kind_fallback(
            declaration, tools, self.settings.declaration_kind
        )
        return ToolSetCheck(declaration, fallback)

    def decode(self, ids: list[int]) -> str:
        if self._backend is not None:
            return self._backend.decode(ids, skip_special_tokens=False)
        return self.tokenizer.decode(ids, skip_special_tokens=False)

    def render(
        self, messages: list[dict], tools: list[dict] | None, mode: str | None = None
    ) -> Rendered:
        return self.render_many([(messages, tools, mode)])[0]

    def render_many(self, jobs: list[tuple]) -> list[Rendered]:
        """Render each `(messages, tools)`, or `(messages, tools, mode)` for a thinking mode;
        the texts are encoded together (see the module docstring). A prompt the template
        refuses fails alone."""
        modes = [job[2] if len(job) > 2 else None for job in jobs]
        if self.settings.route != "text":
            return [self._direct(job[0], job[1], m) for job, m in zip(jobs, modes)]
        texts: list[str | BaseException] = []
        printed: list[str] = []
        for (messages, tools, *_), m in zip(jobs, modes):
            try:
                rendered, said = self.text_capturing(messages, tools, m)
                texts.append(rendered)
                printed.append(said)
            except Exception as err:  # jinja's raise_exception, TypeError on odd content, ...
                texts.append(err)
                printed.append("")
        ok = [t for t in texts if isinstance(t, str)]
        encoded: Iterator[list[int] | BaseException]
        try:
            encoded = iter(self.encode_many(ok))
        except Exception:  # one text the tokenizer refuses: find it, the others go on
            encoded = iter([self._encode_or_error(t) for t in ok])
        out = []
        for (_messages, tools, *_), m, text, stdout in zip(jobs, modes, texts, printed):
            ids: list[int] | BaseException = (
                text if isinstance(text, BaseException) else next(encoded)
            )
            if isinstance(ids, BaseException):
                out.append(Rendered(None, f"{type(ids).__name__}: {ids}"))
            else:
                out.append(self._checked(text, ids, tools, stdout, m))  # type: ignore[arg-type]
        return out

    def _encode_or_error(self, text: str) -> list[int] | BaseException:
        try:
            return self.encode(text)
        except Exception as err:
            return err

    def _direct(
        self, messages: list[dict], tools: list[dict] | None, mode: str | None = None
    ) -> Rendered:
        buf = io.StringIO()
        try:
            with redirect_stdout(buf):
                ids = self.ids_direct(messages, tools, mode)
        except Exception as err:
            return Rendered(None, f"{type(err).__name__}: {err}")
        return self._checked(None, ids, tools, buf.getvalue() if tools else "", mode)

    def prefix(self, mode: str | None) -> tuple[str | None, tuple[int, ...]]:
        """The text (and its ids) every prompt must end with: the job's, or a mode's."""
        if mode is None:
            return self.settings.generation_prefix, self.settings.prefix_ids
        variant = self.settings.variants[mode]
        return variant.prefix, variant.prefix_ids

    def _checked(
        self,
        text: str | None,
        ids: list[int],
        tools: list[dict] | None,
        printed: str = "",
        mode: str | None = None,
    ) -> Rendered:
        """The per-sample checks: generation prefix (text and ids), tools in the prompt (names
        searched in the text; only the `ids` route decodes), tool fallback (what the tokenizer
        printed while rendering this prompt, else its tool set's check)."""
        prefix, prefix_ids = self.prefix(mode)
        prefix_ok = True
        if prefix:
            prefix_ok = (text is None or text.endswith(prefix)) and tuple(
                ids[-len(prefix_ids) :]
            ) == prefix_ids
        missing: list[str] = []
        fallback = None
        if tools:
            missing = missing_tool_names(self.decode(ids) if text is None else text, tools)
            fallback = printed_fallback(printed)
            if fallback is None and (check := self.tool_set(tools)) is not None:
                fallback = check.fallback
        return Rendered(ids, None, prefix_ok, missing, fallback)
