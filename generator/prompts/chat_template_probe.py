"""The start-up probe of the chat template: which route, encoder and tool-call form every prompt
then takes (`RenderSettings`).

`probe_settings` renders a probe conversation and compares the text route (render, then encode)
with `apply_chat_template(..., tokenize=True, return_dict=False)`; if the two differ (tokenizers
whose control tokens have no faithful text form), every prompt takes the direct ids route
instead. The Rust tokenizer's `encode` and `encode_batch_fast` are taken only where the probe
shows they give the ids of the tokenizer's own `encode`. Tool-call arguments reach the template
as the row gave them (a JSON string verbatim), unless the probe shows the template JSON-encodes a
string argument (a template written for objects only, which would print the string quoted): then
the parsed object is passed, as SGLang's chat endpoint does.
"""

from __future__ import annotations

import json
from typing import Any

from draftgen.generator.prompts.chat_template import Renderer, RenderSettings
from draftgen.generator.prompts.integrity import (
    PROBE_MESSAGES,
    PROBE_TOOL_NAME,
    PROBE_TOOLS,
    IntegrityError,
    check_generation_prefix,
    missing_tool_names,
)
from draftgen.generator.prompts.tool_declaration import declaration_kind, declared_part

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
# Two calls in one turn: does the template render the second (gpt-oss's renders the first only)?
PROBE_SECOND_CALL = "draftgen_probe_second_call"
PROBE_PARALLEL_MESSAGES: list[dict] = [
    *PROBE_MESSAGES,
    {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            PROBE_CALL_MESSAGES[1]["tool_calls"][0],
            {
                "id": f"functions.{PROBE_SECOND_CALL}:1",
                "type": "function",
                "function": {"name": PROBE_SECOND_CALL, "arguments": PROBE_ARGUMENTS},
            },
        ],
    },
    PROBE_CALL_MESSAGES[2],
    {"role": "tool", "tool_call_id": f"functions.{PROBE_SECOND_CALL}:1", "content": "windy"},
]


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
    _probe_variants(Renderer(tokenizer, settings))
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


def _probe_variants(renderer: Renderer) -> None:
    """Each thinking mode's probe prompt ends with the prefix its family documents
    (thinking.py); a template that writes something else is not the family's published one."""
    for mode, variant in renderer.settings.variants.items():
        rendered = renderer.render(PROBE_MESSAGES, None, mode)
        if rendered.error is None and rendered.prefix_ok:
            continue
        shown = (
            f"fails ({rendered.error})"
            if rendered.error is not None
            else f"ends with {renderer.decode((rendered.ids or [])[-8:])!r}"
        )
        raise IntegrityError(
            f"{variant.field}: with thinking {mode} ({variant.kwargs}) the chat template's probe "
            f"prompt {shown}, not {variant.prefix!r} as the family's published template writes; "
            "remove thinking and set model.chatTemplateKwargs and model.generationPrefix for "
            "this template yourself"
        )


def _probe_tools(renderer: Renderer) -> RenderSettings:
    """The settings with what the probe tool shows of the template: its own declaration's kind,
    and whether a JSON-string argument is printed as it is (else arguments go as objects)."""
    settings = renderer.settings
    try:
        without = renderer.text(PROBE_MESSAGES, None)
        with_tools, _ = renderer.text_capturing(PROBE_MESSAGES, PROBE_TOOLS)
    except Exception:  # a template without tools: nothing to learn
        return settings
    kind = declaration_kind(declared_part(with_tools, without), PROBE_TOOLS)
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
    try:
        parallel = PROBE_SECOND_CALL in renderer.text(PROBE_PARALLEL_MESSAGES, PROBE_TOOLS)
    except Exception:  # refuses parallel calls outright: each such prompt a template_error
        parallel = True
    return RenderSettings(
        **{
            **settings.__dict__,
            "declaration_kind": kind,
            "string_arguments": verbatim,
            "parallel_calls": parallel,
        }
    )
