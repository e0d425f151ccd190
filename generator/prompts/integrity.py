"""The tokenizer and chat-template checks that keep wrong data from being made, and their errors.

The checks are pure functions; `pretokenize` runs them when it loads the tokenizer (and, for
tools, on samples as it renders them), `inputs` raises `tools_dropped_error` while a dataset's
first `STRICT_TOOL_SAMPLES` tool-bearing samples are read. Each failure is an `IntegrityError`
whose message names the setting and the fix:

- `check_special_tokens`: every `spec.model.specialTokens` entry must encode to exactly one
  vocabulary id (a `<think>` split into `<`, `think`, `>` teaches the drafter the wrong tokens);
- `check_generation_prefix`: a probe prompt (`PROBE_MESSAGES`) rendered with
  `spec.model.chatTemplateKwargs` must end with `spec.model.generationPrefix` (e.g. Kimi's
  `<think>`), in its text and in its ids;
- `missing_tool_names`: a template given tools must put them in the prompt (the probe tool
  `PROBE_TOOLS`, checked at start whenever a dataset is `glaive`, and each sample with tools).

`tokenizer_fingerprint` gives the facts the request side compares with the server's
`/get_model_info` and `/get_server_info` (vocabulary size, end-of-sequence ids, template hash).
"""

from __future__ import annotations

import hashlib
from typing import Any

from draftgen.contract.generator_cli import ExitCode
from draftgen.errors import DraftgenError

PROBE_MESSAGES = [{"role": "user", "content": "What is the weather in Paris today?"}]
PROBE_TOOL_NAME = "draftgen_probe_lookup_weather"
PROBE_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": PROBE_TOOL_NAME,
            "description": "Look up the current weather for a city.",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        },
    }
]

# How many tool-bearing samples of a dataset are checked strictly: a template that drops tools
# (or drops the kind of tools this dataset has) shows on the first ones, and then no data should
# be made; a single odd row later in a long job becomes a `tools_missing` reject instead.
STRICT_TOOL_SAMPLES = 16


class IntegrityError(DraftgenError, RuntimeError):
    """The tokenizer, template or spec, or a server serving another tokenizer
    (`fleet.check_server_tokenizer`), would produce wrong data; the message says how to fix it.
    `draftgen generate` refuses to start with exit code 3."""

    exit_code = ExitCode.INTEGRITY
    fix = "fix the tokenizer, chat template or special tokens named; the data would be wrong"

    def report(self) -> list[str]:
        return [f"refusing to start: {self}"]


def _show(text: str, tail: int = 80) -> str:
    return repr(text if len(text) <= tail else "…" + text[-tail:])


def check_special_tokens(
    tokenizer: Any, tokens: list[str], encode_kwargs: dict[str, Any]
) -> dict[str, int]:
    """Each token must encode to exactly one id that decodes back to it; returns token → id."""
    found: dict[str, int] = {}
    problems = []
    for token in tokens:
        ids = list(tokenizer.encode(token, **encode_kwargs))
        if len(ids) != 1:
            pieces = [tokenizer.decode([i], skip_special_tokens=False) for i in ids]
            problems.append(
                f"{token!r} encodes to {len(ids)} ids {ids} ({', '.join(map(repr, pieces))})"
            )
            continue
        back = tokenizer.decode(ids, skip_special_tokens=False)
        if back != token:
            problems.append(f"{token!r} encodes to id {ids[0]}, which decodes to {back!r}")
            continue
        found[token] = ids[0]
    if problems:
        raise IntegrityError(
            "model.specialTokens: each must be exactly one vocabulary id of the tokenizer, but "
            + "; ".join(problems)
            + ". Point model.tokenizer (or model.weights) at the target model's own tokenizer, or "
            "remove the token from model.specialTokens if the model does not have it"
        )
    return found


def check_generation_prefix(
    text: str | None, ids: list[int], prefix: str, prefix_ids: list[int], what: str
) -> None:
    """The rendered prompt must end with the generation prefix, as text and as ids."""
    if text is not None and not text.endswith(prefix):
        raise IntegrityError(
            f"model.generationPrefix: the {what} rendered by the chat template ends with "
            f"{_show(text)}, not {prefix!r}; set model.chatTemplateKwargs so the template adds it "
            f"(e.g. {{thinking: true}} for Kimi, {{enable_thinking: true}} for Qwen3) or correct "
            "model.generationPrefix"
        )
    if prefix_ids and list(ids[-len(prefix_ids) :]) != list(prefix_ids):
        raise IntegrityError(
            f"model.generationPrefix: the {what} ends with {prefix!r} as text but its last ids "
            f"{list(ids[-len(prefix_ids) :])} are not {list(prefix_ids)} (the prefix merges with "
            "the text before it); make the prefix a special token of the tokenizer"
        )


def missing_tool_names(decoded: str, tools: list[dict[str, Any]] | None) -> list[str]:
    """Names of the tools that do not appear in a decoded prompt."""
    return [t["function"]["name"] for t in tools or () if t["function"]["name"] not in decoded]


def tools_dropped_error(dataset: str, index: int, missing: list[str]) -> IntegrityError:
    return IntegrityError(
        f"datasets[{dataset}]: row {index}'s prompt does not contain its tools "
        f"{', '.join(map(repr, missing))} after the chat template rendered it: the template drops "
        "tools (or this kind of tool definition), so the model would never see them. Use the "
        "target model's own tokenizer and chat template (model.tokenizer), one whose template "
        "accepts `tools`"
    )


def tokenizer_fingerprint(tokenizer: Any) -> dict[str, Any]:
    """Facts the request side compares with the server (`/get_model_info`, `/get_server_info`):
    `vocab_size` (ids are below it), `eos_token_ids`, `special_token_ids`, and the template's hash."""
    special: dict[str, int] = {}
    for token in list(getattr(tokenizer, "all_special_tokens", [])) + [
        str(t)
        for t in getattr(tokenizer, "added_tokens_decoder", {}).values()
        if getattr(t, "special", False)
    ]:
        tid = tokenizer.convert_tokens_to_ids(token)
        if isinstance(tid, int) and tid >= 0:
            special[token] = tid
    eos = tokenizer.eos_token_id
    eos_ids = sorted({eos} if isinstance(eos, int) else set(eos or ()))
    template = (
        tokenizer.chat_template
        if isinstance(getattr(tokenizer, "chat_template", None), str)
        else None
    )
    return {
        "name_or_path": str(getattr(tokenizer, "name_or_path", "")),
        "class": type(tokenizer).__name__,
        "vocab_size": len(tokenizer),  # base vocabulary plus added tokens: every id is below it
        "eos_token_ids": eos_ids,
        "bos_token_id": tokenizer.bos_token_id,
        "special_token_ids": dict(sorted(special.items(), key=lambda kv: kv[1])),
        "chat_template_sha256": hashlib.sha256(template.encode()).hexdigest() if template else None,
    }
