"""gpt-oss (harmony response format) on a small tiktoken encoding in o200k_harmony's id layout.

The encoding is a real `tiktoken.Encoding`: o200k's pre-tokenization pattern, the 256 bytes and a
few hundred merges learnt from a tiny corpus as its ranks, and harmony's special tokens at their
o200k_harmony ids (199,998 and up; vocabulary 201,088). The tokenizer directory holds the same
encoding converted to a Hugging Face fast tokenizer, as gpt-oss ships it, and `tiktoken_encoding()`
gives the tiktoken side, so a test can check the two agree.

Documented behaviour the template reproduces (written from OpenAI's harmony format guide, and
where they differ, as the published `chat_template.jinja` of openai/gpt-oss-120b renders):
- A `system` message with the model identity, `Current date:` from `strftime_now("%Y-%m-%d")`
  (so a prompt changes from day to day), `Reasoning: <reasoning_effort>` (kwarg, default
  `medium`) and the valid channels; the dataset's system prompt and the tools go in a
  `developer` message (`# Instructions`, then `# Tools` with a TypeScript-like
  `namespace functions`).
- Assistant answers are `<|channel|>final` messages; reasoning is the `analysis` channel, read
  from a message's `thinking`. Reasoning in history: dropped for every turn that ended in a final
  answer; kept for tool-calling turns after the last final answer (the chain being answered).
- A call is `<|start|>assistant to=functions.NAME<|channel|>commentary json<|message|>
  ARGUMENTS<|call|>` (string arguments verbatim, objects as JSON), and only an assistant turn's
  first call is rendered; a result is `<|start|>functions.NAME to=assistant<|channel|>commentary
  <|message|>...<|end|>`, NAME the last rendered call's (so the results of parallel calls are all
  named after the first).
- The generation prompt is `<|start|>assistant`; the model picks its channel itself.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .vocab import TokenizerRecipe, build_tokenizer, byte_ranks

VOCAB_SIZE = 201_088
SPECIALS = {
    "<|startoftext|>": 199998,
    "<|endoftext|>": 199999,
    "<|return|>": 200002,
    "<|constrain|>": 200003,
    "<|channel|>": 200005,
    "<|start|>": 200006,
    "<|end|>": 200007,
    "<|message|>": 200008,
    "<|call|>": 200012,
    "<|endofprompt|>": 200018,
}
# o200k's pre-tokenization (the regular expression tiktoken splits text with before BPE).
O200K_PATTERN = "|".join(
    [
        r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
        r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
        r"\p{N}{1,3}",
        r" ?[^\s\p{L}\p{N}]+[\r\n/]*",
        r"\s*[\r\n]+",
        r"\s+(?!\S)",
        r"\s+",
    ]
)
# Words the merges are learnt from: harmony's own vocabulary and a little prose.
CORPUS = [
    "assistant",
    "analysis",
    "commentary",
    "final",
    "functions",
    "developer",
    "system",
    "user",
    "message",
    "channel",
    "Reasoning",
    "medium",
    "high",
    "low",
    "Instructions",
    "Tools",
    "namespace",
    "type",
    "string",
    "number",
    "boolean",
    "any",
    "",
    "the",
    "weather",
    "in",
    "Paris",
    "is",
    "today",
    "Valid",
    "channels",
    "must",
    "be",
    "included",
    "for",
    "every",
    "message",
    "call",
    "",
    "You",
    "are",
    "ChatGPT",
    "a",
    "large",
    "language",
    "model",
    "trained",
    "by",
    "OpenAI",
    "Knowledge",
    "cutoff",
]
NUM_MERGES = 300


def ranks() -> dict[bytes, int]:
    """The encoding's mergeable ranks (token bytes -> id), below the first special id."""
    return byte_ranks(set(SPECIALS.values()), CORPUS, NUM_MERGES)


def tiktoken_encoding() -> Any:
    """The tiktoken side of the fixture (`tiktoken.Encoding`), built in memory."""
    import tiktoken

    return tiktoken.Encoding(
        name="tiny_o200k_harmony",
        pat_str=O200K_PATTERN,
        mergeable_ranks=ranks(),
        special_tokens=dict(SPECIALS),
    )


_TS_TYPE = (
    "{%- macro ts_type(s) -%}"
    "{%- if s.enum is defined -%}"
    "{%- for v in s.enum -%}{{- (' | ' if not loop.first else '') + (v | tojson) -}}{%- endfor -%}"
    "{%- elif s.type == 'string' -%}{{- 'string' -}}"
    "{%- elif s.type in ('number', 'integer') -%}{{- 'number' -}}"
    "{%- elif s.type == 'boolean' -%}{{- 'boolean' -}}"
    "{%- elif s.type == 'array' -%}{{- (ts_type(s['items']) if s['items'] is defined else 'any') + '[]' -}}"
    "{%- else -%}{{- 'any' -}}{%- endif -%}"
    "{%- endmacro -%}"
)
_DECLARE = (
    "{%- macro declare(tools) -%}"
    "{{- '# Tools\\n\\n## functions\\n\\nnamespace functions {\\n\\n' -}}"
    "{%- for tool in tools -%}"
    "{%- set fn = tool.function if tool.function is defined else tool -%}"
    "{%- if fn.description -%}{{- '// ' + fn.description + '\\n' -}}{%- endif -%}"
    "{%- set props = (fn.parameters or {}).properties or {} -%}"
    "{%- if props -%}"
    "{{- 'type ' + fn.name + ' = (_: {\\n' -}}"
    "{%- for name, p in props.items() -%}"
    "{%- if p.description -%}{{- '// ' + p.description + '\\n' -}}{%- endif -%}"
    "{{- name + ('' if name in ((fn.parameters or {}).required or []) else '?') + ': ' + ts_type(p) + ',\\n' -}}"
    "{%- endfor -%}"
    "{{- '}) => any;\\n\\n' -}}"
    "{%- else -%}{{- 'type ' + fn.name + ' = () => any;\\n\\n' -}}{%- endif -%}"
    "{%- endfor -%}"
    "{{- '} // namespace functions' -}}"
    "{%- endmacro -%}"
)
TEMPLATE = (
    _TS_TYPE
    + _DECLARE
    + "{%- set effort = reasoning_effort if reasoning_effort is defined else 'medium' -%}"
    "{{- '<|start|>system<|message|>You are ChatGPT, a large language model trained by OpenAI.\\n'"
    " + 'Knowledge cutoff: 2024-06\\nCurrent date: ' + strftime_now('%Y-%m-%d') + '\\n\\n'"
    " + 'Reasoning: ' + effort + '\\n\\n'"
    " + '# Valid channels: analysis, commentary, final. Channel must be included for every message.' -}}"
    "{%- if tools -%}{{- '\\nCalls to these tools must go to the commentary channel: \\'functions\\'.' -}}{%- endif -%}"
    "{{- '<|end|>' -}}"
    "{%- set sys = messages[0].content if messages and messages[0].role == 'system' else none -%}"
    "{%- if sys is not none or tools -%}"
    "{{- '<|start|>developer<|message|>' -}}"
    "{%- if sys is not none -%}{{- '# Instructions\\n\\n' + sys + ('\\n\\n' if tools else '') -}}{%- endif -%}"
    "{%- if tools -%}{{- declare(tools) -}}{%- endif -%}"
    "{{- '<|end|>' -}}"
    "{%- endif -%}"
    # the last final answer: reasoning before it is dropped, after it kept
    "{%- set ns = namespace(last_final=-1, last_call=none) -%}"
    "{%- for m in messages -%}"
    "{%- if m.role == 'assistant' and not m.tool_calls -%}{%- set ns.last_final = loop.index0 -%}{%- endif -%}"
    "{%- endfor -%}"
    "{%- for m in messages -%}"
    "{%- if m.role == 'user' or (m.role == 'system' and not loop.first) -%}"
    "{{- '<|start|>' + ('user' if m.role == 'user' else 'developer') + '<|message|>' + m.content + '<|end|>' -}}"
    "{%- elif m.role == 'assistant' and m.tool_calls -%}"
    "{%- if m.thinking and loop.index0 > ns.last_final -%}"
    "{{- '<|start|>assistant<|channel|>analysis<|message|>' + m.thinking + '<|end|>' -}}"
    "{%- endif -%}"
    "{%- if m.content -%}{{- '<|start|>assistant<|channel|>commentary<|message|>' + m.content + '<|end|>' -}}{%- endif -%}"
    # the published template renders the first call only
    "{%- set call = m.tool_calls[0] -%}"
    "{%- set fn = call.function if call.function is defined else call -%}"
    "{%- set ns.last_call = fn.name -%}"
    "{{- '<|start|>assistant to=functions.' + fn.name + '<|channel|>commentary json<|message|>' -}}"
    "{%- if fn.arguments is string -%}{{- fn.arguments -}}{%- else -%}{{- fn.arguments | tojson -}}{%- endif -%}"
    "{{- '<|call|>' -}}"
    "{%- elif m.role == 'assistant' -%}"
    "{{- '<|start|>assistant<|channel|>final<|message|>' + m.content + '<|end|>' -}}"
    "{%- elif m.role == 'tool' -%}"
    "{%- if ns.last_call is none -%}{{- raise_exception('a tool result with no call before it') -}}{%- endif -%}"
    "{{- '<|start|>functions.' + ns.last_call + ' to=assistant<|channel|>commentary<|message|>' + m.content + '<|end|>' -}}"
    "{%- endif -%}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{- '<|start|>assistant' -}}{%- endif -%}"
)


def recipe() -> TokenizerRecipe:
    return TokenizerRecipe(
        specials=SPECIALS,
        vocab_size=VOCAB_SIZE,
        template=TEMPLATE,
        eos="<|return|>",
        pattern=O200K_PATTERN,
        ranks=ranks(),
        extra_config={"pad_token": "<|endoftext|>"},
    )


def build(directory: Path) -> Path:
    return build_tokenizer(directory, recipe())
