"""DeepSeek-V3.1 (and R1, same vocabulary): `<｜User｜>`/`<｜Assistant｜>` turns after a BOS, one `thinking` switch, tool calls
in the `<｜tool▁calls▁begin｜>` family of tokens.

Documented behaviour this template reproduces (written from DeepSeek-V3.1's model card):
- `thinking` (default false): the generation prompt is `<｜Assistant｜><think>` in thinking mode,
  `<｜Assistant｜></think>` otherwise.
- Reasoning in history: every earlier assistant turn is printed as `<｜Assistant｜></think>` and
  its answer (what follows `</think>` in its content); `reasoning_content` is never read, so all
  history turns lose their reasoning.
- Tools (non-thinking mode): declared in the system prompt under `## Tools`, one `### name`
  section each with its description and JSON parameters; a call is
  `<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>NAME<｜tool▁sep｜>ARGUMENTS<｜tool▁call▁end｜>...
  <｜tool▁calls▁end｜><｜end▁of▁sentence｜>` with the arguments as the JSON string given; a
  result is `<｜tool▁output▁begin｜>...<｜tool▁output▁end｜>`. After a tool result the template
  adds no generation prompt: the model writes its answer right after `<｜tool▁output▁end｜>`,
  so such prompts do not end with `<think>` or `</think>`.
- BOS is printed by the template and added by the tokenizer's own encode (draftgen encodes the
  rendered text without adding it again).
"""

from __future__ import annotations

from pathlib import Path

from .vocab import TokenizerRecipe, build_tokenizer

VOCAB_SIZE = 129_280
SPECIALS = {
    "<｜begin▁of▁sentence｜>": 0,
    "<｜end▁of▁sentence｜>": 1,
    "<｜▁pad▁｜>": 2,
    "<think>": 128798,
    "</think>": 128799,
    "<｜User｜>": 128803,
    "<｜Assistant｜>": 128804,
    "<｜tool▁calls▁begin｜>": 128806,
    "<｜tool▁calls▁end｜>": 128807,
    "<｜tool▁call▁begin｜>": 128808,
    "<｜tool▁call▁end｜>": 128809,
    "<｜tool▁outputs▁begin｜>": 128810,
    "<｜tool▁outputs▁end｜>": 128811,
    "<｜tool▁output▁begin｜>": 128812,
    "<｜tool▁output▁end｜>": 128813,
    "<｜tool▁sep｜>": 128814,
}
PLAIN_ADDED = ("<think>", "</think>")

_SYSTEM = (
    "{%- set ns = namespace(system='', first_system=true, last_user=false, after_tool=false) -%}"
    "{%- for m in messages if m.role == 'system' -%}"
    "{%- set ns.system = ns.system + ('' if ns.first_system else '\\n\\n') + m.content -%}"
    "{%- set ns.first_system = false -%}"
    "{%- endfor -%}"
)
# The model card's `## Tools` section of the system prompt (the shipped template lacks it).
_TOOLS = (
    "{%- if tools -%}"
    "{%- set ns.system = (ns.system + '\\n\\n' if ns.system else '') + '## Tools\\nYou can use these tools:\\n' -%}"
    "{%- for tool in tools -%}"
    "{%- set fn = tool.function if tool.function is defined else tool -%}"
    "{%- set ns.system = ns.system + '\\n### ' + fn.name + '\\nDescription: ' + (fn.description or '')"
    " + '\\n\\nParameters: ' + ((fn.parameters or {}) | tojson) + '\\n' -%}"
    "{%- endfor -%}"
    "{%- set ns.system = ns.system + '\\nTo use a tool, answer exactly in this form:\\n'"
    " + '<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>tool_name<｜tool▁sep｜>arguments_json'"
    " + '<｜tool▁call▁end｜>(further calls)<｜tool▁calls▁end｜>\\n' -%}"
    "{%- endif -%}"
)
_TURNS = (
    "{{- bos_token + ns.system -}}"
    "{%- for m in messages -%}"
    "{%- if m.role == 'user' -%}"
    "{{- '<｜User｜>' + m.content -}}"
    "{%- set ns.last_user = true -%}{%- set ns.after_tool = false -%}"
    "{%- elif m.role == 'assistant' -%}"
    "{%- if ns.last_user -%}{{- '<｜Assistant｜></think>' -}}{%- endif -%}"
    "{%- set content = m.content if m.content is string else '' -%}"
    "{%- if not ns.after_tool and '</think>' in content -%}"
    "{%- set content = content.split('</think>', 1)[1] -%}"
    "{%- endif -%}"
    "{{- content -}}"
    "{%- if m.tool_calls -%}"
    "{{- '<｜tool▁calls▁begin｜>' -}}"
    "{%- for call in m.tool_calls -%}"
    "{%- set fn = call.function if call.function is defined else call -%}"
    "{{- '<｜tool▁call▁begin｜>' + fn.name + '<｜tool▁sep｜>' -}}"
    "{%- if fn.arguments is string -%}{{- fn.arguments -}}{%- else -%}{{- fn.arguments | tojson -}}{%- endif -%}"
    "{{- '<｜tool▁call▁end｜>' -}}"
    "{%- endfor -%}"
    "{{- '<｜tool▁calls▁end｜>' -}}"
    "{%- endif -%}"
    "{{- '<｜end▁of▁sentence｜>' -}}"
    "{%- set ns.last_user = false -%}{%- set ns.after_tool = false -%}"
    "{%- elif m.role == 'tool' -%}"
    "{{- '<｜tool▁output▁begin｜>' + m.content + '<｜tool▁output▁end｜>' -}}"
    "{%- set ns.last_user = false -%}{%- set ns.after_tool = true -%}"
    "{%- endif -%}"
    "{%- endfor -%}"
    # no generation prompt after a tool result: the answer follows the output directly
    "{%- if add_generation_prompt and not ns.after_tool -%}"
    "{{- '<｜Assistant｜>' + ('<think>' if thinking is defined and thinking else '</think>') -}}"
    "{%- endif -%}"
)
TEMPLATE = _SYSTEM + _TOOLS + _TURNS
# As the tokenizer ships it: tools are not declared (draftgen refuses a dataset with tools).
TEMPLATE_WITHOUT_TOOLS = _SYSTEM + _TURNS

# DeepSeek-R1 (the same vocabulary): no `thinking` switch, the generation prompt always opens
# the reasoning (`<｜Assistant｜><think>\n`), history turns keep only what follows `</think>`,
# a call is `function<｜tool▁sep｜>NAME` and the arguments in a json code fence, results are
# wrapped in `<｜tool▁outputs▁begin｜>...<｜tool▁outputs▁end｜>`; tools are not declared.
R1_TEMPLATE = _SYSTEM + (
    "{{- bos_token + ns.system -}}"
    "{%- for m in messages -%}"
    "{%- if m.role == 'user' -%}"
    "{{- '<｜User｜>' + m.content -}}{%- set ns.after_tool = false -%}"
    "{%- elif m.role == 'assistant' -%}"
    "{%- set content = m.content if m.content is string else '' -%}"
    "{%- if '</think>' in content -%}{%- set content = content.split('</think>')[-1] -%}{%- endif -%}"
    "{{- '<｜tool▁outputs▁end｜>' if ns.after_tool else '<｜Assistant｜>' -}}"
    "{{- content -}}"
    "{%- for call in m.tool_calls or [] -%}"
    "{%- set fn = call.function if call.function is defined else call -%}"
    "{{- ('<｜tool▁calls▁begin｜>' if loop.first else '\\n') + '<｜tool▁call▁begin｜>function<｜tool▁sep｜>'"
    " + fn.name + '\\n```json\\n' -}}"
    "{%- if fn.arguments is string -%}{{- fn.arguments -}}{%- else -%}{{- fn.arguments | tojson -}}{%- endif -%}"
    "{{- '\\n```<｜tool▁call▁end｜>' + ('<｜tool▁calls▁end｜>' if loop.last else '') -}}"
    "{%- endfor -%}"
    "{{- '<｜end▁of▁sentence｜>' -}}{%- set ns.after_tool = false -%}"
    "{%- elif m.role == 'tool' -%}"
    "{{- ('\\n' if ns.after_tool else '<｜tool▁outputs▁begin｜>')"
    " + '<｜tool▁output▁begin｜>' + m.content + '<｜tool▁output▁end｜>' -}}"
    "{%- set ns.after_tool = true -%}"
    "{%- endif -%}"
    "{%- endfor -%}"
    "{%- if ns.after_tool -%}{{- '<｜tool▁outputs▁end｜>' -}}{%- endif -%}"
    "{%- if add_generation_prompt and not ns.after_tool -%}{{- '<｜Assistant｜><think>\\n' -}}{%- endif -%}"
)


# DeepSeek-R1-0528 (the same vocabulary and history rules as R1): its generation prompt is
# `<｜Assistant｜>` alone; the model writes `<think>\n` itself, so the reasoning's opening is in
# the completion, not in the prompt.
R1_0528_TEMPLATE = R1_TEMPLATE.replace(
    "{{- '<｜Assistant｜><think>\\n' -}}", "{{- '<｜Assistant｜>' -}}"
)
assert R1_0528_TEMPLATE != R1_TEMPLATE


def recipe(template: str = TEMPLATE) -> TokenizerRecipe:
    return TokenizerRecipe(
        specials=SPECIALS,
        vocab_size=VOCAB_SIZE,
        template=template,
        eos="<｜end▁of▁sentence｜>",
        bos="<｜begin▁of▁sentence｜>",
        add_bos=True,
        plain_added=PLAIN_ADDED,
        extra_config={"pad_token": "<｜▁pad▁｜>"},
    )


def build(directory: Path) -> Path:
    """DeepSeek-V3.1, with the model card's tool declaration in its template."""
    return build_tokenizer(directory, recipe())


def build_without_tools(directory: Path) -> Path:
    """DeepSeek-V3.1 with a template that does not declare tools, as the tokenizer ships it."""
    return build_tokenizer(directory, recipe(TEMPLATE_WITHOUT_TOOLS))


def build_r1(directory: Path) -> Path:
    """DeepSeek-R1."""
    return build_tokenizer(directory, recipe(R1_TEMPLATE))


def build_r1_0528(directory: Path) -> Path:
    """DeepSeek-R1-0528: the prompt ends with `<｜Assistant｜>`."""
    return build_tokenizer(directory, recipe(R1_0528_TEMPLATE))
