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
"""

from __future__ import annotations

from collections.abc import Iterator
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


@dataclass(frozen=True, slots=True)
class Rendered:
    """One rendered prompt, or why it failed."""

    ids: list[int] | None
    error: str | None = None
    prefix_ok: bool = True
    missing_tools: list[str] = field(default_factory=list)


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

    def text(self, messages: list[dict], tools: list[dict] | None) -> str:
        return self.tokenizer.apply_chat_template(
            messages,
            tools=tools or None,
            add_generation_prompt=True,
            tokenize=False,
            **self.settings.chat_template_kwargs,
        )

    def ids_direct(self, messages: list[dict], tools: list[dict] | None) -> list[int]:
        out = self.tokenizer.apply_chat_template(
            messages,
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
        for messages, tools in jobs:
            try:
                texts.append(self.text(messages, tools))
            except Exception as err:  # jinja's raise_exception, TypeError on odd content, ...
                texts.append(err)
        ok = [t for t in texts if isinstance(t, str)]
        encoded: Iterator[list[int] | BaseException]
        try:
            encoded = iter(self.encode_many(ok))
        except Exception:  # one text the tokenizer refuses: find it, the others go on
            encoded = iter([self._encode_or_error(t) for t in ok])
        out = []
        for (_messages, tools), text in zip(jobs, texts):
            ids: list[int] | BaseException = (
                text if isinstance(text, BaseException) else next(encoded)
            )
            if isinstance(ids, BaseException):
                out.append(Rendered(None, f"{type(ids).__name__}: {ids}"))
            else:
                out.append(self._checked(text, ids, tools))  # type: ignore[arg-type]
        return out

    def _encode_or_error(self, text: str) -> list[int] | BaseException:
        try:
            return self.encode(text)
        except Exception as err:
            return err

    def _direct(self, messages: list[dict], tools: list[dict] | None) -> Rendered:
        try:
            ids = self.ids_direct(messages, tools)
        except Exception as err:
            return Rendered(None, f"{type(err).__name__}: {err}")
        return self._checked(None, ids, tools)

    def _checked(self, text: str | None, ids: list[int], tools: list[dict] | None) -> Rendered:
        """The per-sample checks: generation prefix (text and ids), tools in the prompt."""
        s = self.settings
        prefix_ok = True
        if s.generation_prefix:
            prefix_ok = (text is None or text.endswith(s.generation_prefix)) and tuple(
                ids[-len(s.prefix_ids) :]
            ) == s.prefix_ids
        missing = []
        if tools:
            missing = missing_tool_names(self.decode(ids), tools)
        return Rendered(ids, None, prefix_ok, missing)


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
