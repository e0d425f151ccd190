"""How a prompt becomes ids, in the main process and in each tokenizer worker alike.

The template is rendered to text (`apply_chat_template(messages, tools=tools or None,
add_generation_prompt=True, tokenize=False, **chatTemplateKwargs)`) and the text encoded without
adding special tokens again — the same render-then-encode path SGLang's own chat endpoint takes
(with `add_special_tokens=False` only when the tokenizer would add any, which keeps Kimi's
tokenizer on its fast path). At start `probe_settings` compares that with
`apply_chat_template(..., tokenize=True, return_dict=False)`; if the two differ (tokenizers whose
control tokens have no faithful text form), every prompt takes the direct ids route instead.

Speed: a batch's texts are encoded in one call to the Rust tokenizer's `encode_batch_fast` (the
same ids as `encode`, without the character offsets nobody reads here: 10-20 % less time than
encoding one text at a time), taken only where the start-up probe shows it gives the ids of the
tokenizer's own `encode`. Rendering is cheap beside encoding (transformers caches the compiled
template; about 40 µs of a 1,300-token prompt's 500 µs).

Tools. Tool-call arguments reach the template as the row gave them (a JSON string verbatim), unless
the probe shows the template JSON-encodes a string argument (a template written for objects
only, which would print the string quoted): then the parsed object is passed, as SGLang's chat
endpoint does. Whether a prompt's tools are in it is checked on the rendered text (a substring
search; only the `ids` route decodes), and how they were declared once per distinct tool set
(`ToolSetCheck`): a tokenizer that prints to stdout while rendering tools (Kimi's "Failed to
convert tools to TypeScript style"), or a declaration of another kind than the probe's (JSON where
the model's own syntax is not), is a *tool fallback*, reported in `Rendered.tool_fallback`.
"""

from __future__ import annotations

import io
import json
import re
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import redirect_stdout
from dataclasses import dataclass, field
from typing import Any

from .integrity import (
    PROBE_MESSAGES,
    PROBE_TOOL_NAME,
    PROBE_TOOLS,
    IntegrityError,
    check_generation_prefix,
    missing_tool_names,
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


@dataclass(frozen=True, slots=True)
class Rendered:
    """One rendered prompt, or why it failed."""

    ids: list[int] | None
    error: str | None = None
    prefix_ok: bool = True
    missing_tools: list[str] = field(default_factory=list)
    tool_fallback: str | None = None
    """Why the tools are declared in a fallback form (None: in the template's own)."""


@dataclass(frozen=True, slots=True)
class ToolSetCheck:
    """How one tool set is declared, rendered once with the probe conversation."""

    declaration: str
    """What the tools add to the probe prompt."""
    fallback: str | None
    """Why this declaration is a fallback, or None."""


TOOL_SET_CACHE = 4096  # distinct tool sets remembered per renderer (Glaive repeats its sets)
FALLBACK_STDOUT = "the tokenizer printed while rendering the tools: "
_PRINTED_MAX = 300

# A probe tool call whose arguments are a compact JSON string: printed verbatim, or quoted?
PROBE_ARGUMENTS = '{"city":"Paris"}'
PROBE_CALL_MESSAGES: list[dict] = [
    *PROBE_MESSAGES,
    {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {
                "id": f"functions.{PROBE_TOOL_NAME}:0",
                "type": "function",
                "function": {"name": PROBE_TOOL_NAME, "arguments": PROBE_ARGUMENTS},
            }
        ],
    },
    {"role": "tool", "tool_call_id": f"functions.{PROBE_TOOL_NAME}:0", "content": "sunny"},
]


def declaration_kind(declaration: str, tools: list[dict]) -> str:
    """`json` when the tools appear as JSON objects (`"name": "<tool>"`), else `native` (the
    model's own syntax, e.g. Kimi's TypeScript-like namespace)."""
    name = tools[0]["function"]["name"]
    return "json" if re.search(r'"name"\s*:\s*"' + re.escape(name) + '"', declaration) else "native"


def _middle(with_tools: str, without: str) -> str:
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

    def _messages(self, messages: list[dict]) -> list[dict]:
        return messages if self.settings.string_arguments else _as_objects(messages)

    def text(self, messages: list[dict], tools: list[dict] | None) -> str:
        return self.tokenizer.apply_chat_template(
            self._messages(messages),
            tools=tools or None,
            add_generation_prompt=True,
            tokenize=False,
            **self.settings.chat_template_kwargs,
        )

    def ids_direct(self, messages: list[dict], tools: list[dict] | None) -> list[int]:
        out = self.tokenizer.apply_chat_template(
            self._messages(messages),
            tools=tools or None,
            add_generation_prompt=True,
            tokenize=True,
            return_dict=False,
            **self.settings.chat_template_kwargs,
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

    def text_capturing(self, messages: list[dict], tools: list[dict] | None) -> tuple[str, str]:
        """`text`, and what the tokenizer printed to stdout meanwhile (only tools make Kimi's
        tokenizer print; without tools stdout is left alone)."""
        if not tools:
            return self.text(messages, tools), ""
        buf = io.StringIO()
        with redirect_stdout(buf):
            text = self.text(messages, tools)
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
        declaration = _middle(with_tools, self._without_tools)
        fallback = _printed_fallback(printed)
        kind = self.settings.declaration_kind
        if fallback is None and kind is not None:
            got = declaration_kind(declaration, tools)
            if got != kind:
                fallback = (
                    f"the tools are declared as {got}, the template's own declaration (of the "
                    f"probe tool) is {kind}"
                )
        return ToolSetCheck(declaration, fallback)

    def decode(self, ids: list[int]) -> str:
        if self._backend is not None:
            return self._backend.decode(ids, skip_special_tokens=False)
        return self.tokenizer.decode(ids, skip_special_tokens=False)

    def render(self, messages: list[dict], tools: list[dict] | None) -> Rendered:
        return self.render_many([(messages, tools)])[0]

    def render_many(self, jobs: list[tuple[list[dict], list[dict] | None]]) -> list[Rendered]:
        """Render each `(messages, tools)`; the texts are encoded together (see the module
        docstring). A prompt the template refuses fails alone."""
        if self.settings.route != "text":
            return [self._direct(messages, tools) for messages, tools in jobs]
        texts: list[str | BaseException] = []
        printed: list[str] = []
        for messages, tools in jobs:
            try:
                rendered, said = self.text_capturing(messages, tools)
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
        for (_messages, tools), text, stdout in zip(jobs, texts, printed):
            ids: list[int] | BaseException = (
                text if isinstance(text, BaseException) else next(encoded)
            )
            if isinstance(ids, BaseException):
                out.append(Rendered(None, f"{type(ids).__name__}: {ids}"))
            else:
                out.append(self._checked(text, ids, tools, stdout))  # type: ignore[arg-type]
        return out

    def _encode_or_error(self, text: str) -> list[int] | BaseException:
        try:
            return self.encode(text)
        except Exception as err:
            return err

    def _direct(self, messages: list[dict], tools: list[dict] | None) -> Rendered:
        buf = io.StringIO()
        try:
            with redirect_stdout(buf):
                ids = self.ids_direct(messages, tools)
        except Exception as err:
            return Rendered(None, f"{type(err).__name__}: {err}")
        return self._checked(None, ids, tools, buf.getvalue() if tools else "")

    def _checked(
        self, text: str | None, ids: list[int], tools: list[dict] | None, printed: str = ""
    ) -> Rendered:
        """The per-sample checks: generation prefix (text and ids), tools in the prompt (names
        searched in the text; only the `ids` route decodes), tool fallback (what the tokenizer
        printed while rendering this prompt, else its tool set's check)."""
        s = self.settings
        prefix_ok = True
        if s.generation_prefix:
            prefix_ok = (text is None or text.endswith(s.generation_prefix)) and tuple(
                ids[-len(s.prefix_ids) :]
            ) == s.prefix_ids
        missing: list[str] = []
        fallback = None
        if tools:
            missing = missing_tool_names(self.decode(ids) if text is None else text, tools)
            fallback = _printed_fallback(printed)
            if fallback is None and (check := self.tool_set(tools)) is not None:
                fallback = check.fallback
        return Rendered(ids, None, prefix_ok, missing, fallback)


def _printed_fallback(printed: str) -> str | None:
    said = " ".join(printed.split())
    if not said:
        return None
    return FALLBACK_STDOUT + (said if len(said) <= _PRINTED_MAX else said[:_PRINTED_MAX] + "…")


def probe_settings(tokenizer: Any, settings: RenderSettings, with_tools: bool) -> RenderSettings:
    """Render a probe conversation: the template exists and works, the prefix is there, the
    text route gives the same ids as the direct route (else take the direct route), and tools
    reach the prompt when a dataset will carry them."""
    if not getattr(tokenizer, "chat_template", None):
        raise IntegrityError(
            "model.tokenizer: the tokenizer has no chat template, so prompts cannot be rendered "
            "in the model's format; use the model's own tokenizer directory (with "
            "chat_template.jinja or a chat_template in tokenizer_config.json)"
        )
    renderer = Renderer(tokenizer, settings)
    tools = PROBE_TOOLS if with_tools else None
    try:
        probe_text = renderer.text(PROBE_MESSAGES, tools)
    except Exception as err:
        raise IntegrityError(
            f"model.tokenizer: the chat template fails on a one-message probe conversation "
            f"({type(err).__name__}: {err}); check model.chatTemplateKwargs "
            f"{settings.chat_template_kwargs} and that the template belongs to this model"
        ) from None
    via_text = renderer.encode(probe_text)
    text: str | None = probe_text
    try:
        via_ids = renderer.ids_direct(PROBE_MESSAGES, tools)
    except Exception:
        via_ids = via_text  # a template that only renders text: nothing to compare
    if via_ids != via_text:
        settings = RenderSettings(**{**settings.__dict__, "route": "ids"})
        text, ids = None, via_ids
    else:
        ids = via_text
        # Encoding with the Rust tokenizer directly, and a batch at a time, is taken only where
        # it gives the same ids as the tokenizer's own encode.
        samples = [
            probe_text,
            probe_text + " x\n" + probe_text[:40],
            "",
            " \n\t  é 東京 🙂 <think>",
        ]
        reference = [renderer.encode(t) for t in samples]
        fast = Renderer(tokenizer, RenderSettings(**{**settings.__dict__, "backend_encode": True}))
        if fast._backend is not None and [fast.encode(t) for t in samples] == reference:
            settings = fast.settings
            batched = Renderer(
                tokenizer, RenderSettings(**{**settings.__dict__, "batch_encode": True})
            )
            if batched._encode_batch is not None and batched.encode_many(samples) == reference:
                settings = batched.settings
    if settings.generation_prefix:
        check_generation_prefix(
            text, ids, settings.generation_prefix, list(settings.prefix_ids), "probe prompt"
        )
    settings = _probe_tools(Renderer(tokenizer, settings))
    if with_tools:
        decoded = tokenizer.decode(ids, skip_special_tokens=False)
        if missing_tool_names(decoded, PROBE_TOOLS):
            raise IntegrityError(
                f"model.tokenizer: a dataset has format glaive (tools), but the chat template drops "
                f"tools: a probe prompt rendered with a tool named {PROBE_TOOL_NAME!r} does not "
                "contain it. Use the target model's own tokenizer and chat template "
                "(model.tokenizer), one whose template declares `tools`"
            )
    return settings


def _probe_tools(renderer: Renderer) -> RenderSettings:
    """The settings with what the probe tool shows of the template: its own declaration's kind,
    and whether a JSON-string argument is printed as it is (else arguments go as objects)."""
    settings = renderer.settings
    try:
        without = renderer.text(PROBE_MESSAGES, None)
        with_tools, _ = renderer.text_capturing(PROBE_MESSAGES, PROBE_TOOLS)
    except Exception:  # a template without tools: nothing to learn
        return settings
    kind = declaration_kind(_middle(with_tools, without), PROBE_TOOLS)
    verbatim = True
    try:
        call_text, _ = renderer.text_capturing(PROBE_CALL_MESSAGES, PROBE_TOOLS)
    except Exception:  # refuses a string argument (iterates `arguments.items()`, ...)
        call_text = None
    if call_text is None or (
        PROBE_ARGUMENTS not in call_text and json.dumps(PROBE_ARGUMENTS)[1:-1] in call_text
    ):
        objects = Renderer(
            renderer.tokenizer, RenderSettings(**{**settings.__dict__, "string_arguments": False})
        )
        try:
            objects.text(PROBE_CALL_MESSAGES, PROBE_TOOLS)
            verbatim = False
        except Exception:  # neither works: the template has no tool calls; leave them as given
            pass
    return RenderSettings(
        **{**settings.__dict__, "declaration_kind": kind, "string_arguments": verbatim}
    )
