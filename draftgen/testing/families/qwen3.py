"""Qwen3 (the hybrid-thinking releases, e.g. Qwen3-8B, Qwen3-235B-A22B): ChatML turns, tools as
JSON lines in `<tools>` of the system turn, calls as `<tool_call>` JSON inside the assistant's text,
results as `<tool_response>` inside a user turn.

Documented behaviour this template reproduces (written from Qwen's model cards and docs):
- `enable_thinking` (default true): the generation prompt is `<|im_start|>assistant\\n` and the
  model opens `<think>` itself; with `enable_thinking: false` the template writes an empty
  `<think>\\n\\n</think>\\n\\n` after it.
- Reasoning in history: an assistant turn's `reasoning_content` (or the part of its content
  before `</think>`) is printed, as `<think>\\n...\\n</think>\\n\\n`, only for assistant turns
  after the last real user query (the steps of the tool-calling chain being answered); every
  earlier turn loses it.
- A call's `arguments` are printed verbatim when a string, as JSON when an object.
"""

from __future__ import annotations

from pathlib import Path

from .vocab import TokenizerRecipe, build_tokenizer

VOCAB_SIZE = 151_669
SPECIALS = {
    "<|endoftext|>": 151643,
    "<|im_start|>": 151644,
    "<|im_end|>": 151645,
    "<tool_call>": 151657,
    "</tool_call>": 151658,
    "<tool_response>": 151665,
    "</tool_response>": 151666,
    "<think>": 151667,
    "</think>": 151668,
}
# Qwen3 ships these as added tokens that are not `special` (they survive skip_special_tokens).
PLAIN_ADDED = (
    "<tool_call>",
    "</tool_call>",
    "<tool_response>",
    "</tool_response>",
    "<think>",
    "</think>",
)

TEMPLATE = (
    # system turn: the user's system message, then the tool signatures
    "{%- set sys = messages[0].content if messages and messages[0].role == 'system' else none -%}"
    "{%- if tools -%}"
    "{{- '<|im_start|>system\\n' -}}"
    "{%- if sys is not none -%}{{- sys + '\\n\\n' -}}{%- endif -%}"
    "{{- '# Tools\\n\\nFunctions you may call, one JSON signature per line in <tools></tools>:\\n<tools>' -}}"
    "{%- for tool in tools -%}{{- '\\n' + (tool | tojson) -}}{%- endfor -%}"
    "{{- '\\n</tools>\\n\\nTo call a function, answer with its name and arguments as JSON inside "
    '<tool_call></tool_call>:\\n<tool_call>\\n{"name": <function-name>, "arguments": '
    "<args-json-object>}\\n</tool_call><|im_end|>\\n' -}}"
    "{%- elif sys is not none -%}{{- '<|im_start|>system\\n' + sys + '<|im_end|>\\n' -}}{%- endif -%}"
    # the last user turn that is a real query (not tool results wrapped as a user turn)
    "{%- set ns = namespace(last_query=messages | length - 1, searching=true) -%}"
    "{%- for m in messages[::-1] -%}"
    "{%- if ns.searching and m.role == 'user' and not (m.content is string"
    " and m.content.startswith('<tool_response>') and m.content.endswith('</tool_response>')) -%}"
    "{%- set ns.searching = false -%}{%- set ns.last_query = messages | length - 1 - loop.index0 -%}"
    "{%- endif -%}"
    "{%- endfor -%}"
    "{%- for m in messages -%}"
    "{%- if m.role == 'user' or (m.role == 'system' and not loop.first) -%}"
    "{{- '<|im_start|>' + m.role + '\\n' + m.content + '<|im_end|>\\n' -}}"
    "{%- elif m.role == 'assistant' -%}"
    "{%- set content = m.content if m.content is string else '' -%}"
    "{%- set reasoning = '' -%}"
    "{%- if m.reasoning_content is string -%}{%- set reasoning = m.reasoning_content -%}"
    "{%- elif '</think>' in content -%}"
    "{%- set reasoning = content.split('</think>')[0].split('<think>')[-1] -%}"
    "{%- set content = content.split('</think>')[-1] -%}"
    "{%- endif -%}"
    "{%- set content = content.lstrip('\\n') -%}"
    "{%- set reasoning = reasoning.strip('\\n') -%}"
    "{{- '<|im_start|>assistant\\n' -}}"
    # reasoning survives only in the turns after the last real query
    "{%- if loop.index0 > ns.last_query and reasoning -%}"
    "{{- '<think>\\n' + reasoning + '\\n</think>\\n\\n' -}}"
    "{%- endif -%}"
    "{{- content -}}"
    "{%- for call in m.tool_calls or [] -%}"
    "{%- set fn = call.function if call.function is defined else call -%}"
    "{%- if content or not loop.first -%}{{- '\\n' -}}{%- endif -%}"
    '{{- \'<tool_call>\\n{"name": "\' + fn.name + \'", "arguments": \' -}}'
    "{%- if fn.arguments is string -%}{{- fn.arguments -}}{%- else -%}{{- fn.arguments | tojson -}}{%- endif -%}"
    "{{- '}\\n</tool_call>' -}}"
    "{%- endfor -%}"
    "{{- '<|im_end|>\\n' -}}"
    "{%- elif m.role == 'tool' -%}"
    "{%- if loop.first or messages[loop.index0 - 1].role != 'tool' -%}{{- '<|im_start|>user' -}}{%- endif -%}"
    "{{- '\\n<tool_response>\\n' + m.content + '\\n</tool_response>' -}}"
    "{%- if loop.last or messages[loop.index0 + 1].role != 'tool' -%}{{- '<|im_end|>\\n' -}}{%- endif -%}"
    "{%- endif -%}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}"
    "{{- '<|im_start|>assistant\\n' -}}"
    "{%- if enable_thinking is defined and not enable_thinking -%}{{- '<think>\\n\\n</think>\\n\\n' -}}{%- endif -%}"
    "{%- endif -%}"
)

RECIPE = TokenizerRecipe(
    specials=SPECIALS,
    vocab_size=VOCAB_SIZE,
    template=TEMPLATE,
    eos="<|im_end|>",
    plain_added=PLAIN_ADDED,
    extra_config={"pad_token": "<|endoftext|>"},
)


def build(directory: Path) -> Path:
    return build_tokenizer(directory, RECIPE)
