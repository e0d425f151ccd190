"""Llama-3.1/3.3 Instruct: header-framed turns, JSON tool calls, tool results in the `ipython` role,
`<|python_tag|>` calls of the built-in tools.

Documented behaviour this template reproduces (written from Meta's Llama 3.1 prompt-format docs):
- `<|begin_of_text|>`, then a system turn that always carries `Cutting Knowledge Date:` and
  `Today Date:` (`date_string` kwarg, default `26 Jul 2024`) before the dataset's system prompt;
  `Environment: ipython` when tools are given, `Tools: ...` when `builtin_tools` is.
- Custom tools (`tools_in_user_message`, default true) are declared as JSON at the top of the
  first user turn, with the instruction to answer `{"name": ..., "parameters": ...}`.
- A call is that JSON followed by `<|eot_id|>`; the arguments are printed with `tojson`, so they
  must reach the template as an object (a JSON string would be printed as a quoted string). One
  call per assistant turn. A call of a built-in tool (`builtin_tools`: `brave_search`,
  `wolfram_alpha`) is `<|python_tag|>NAME.call(key="value")<|eom_id|>`.
- Results (role `tool` or `ipython`) are printed in an `ipython` turn.
- No reasoning: `reasoning_content` is never read.
- The generation prompt is `<|start_header_id|>assistant<|end_header_id|>\\n\\n`; BOS is printed
  by the template and added by the tokenizer's own encode.
"""

from __future__ import annotations

from pathlib import Path

from .vocab import TokenizerRecipe, build_tokenizer

VOCAB_SIZE = 128_256
SPECIALS = {
    "<|begin_of_text|>": 128000,
    "<|end_of_text|>": 128001,
    "<|finetune_right_pad_id|>": 128004,
    "<|start_header_id|>": 128006,
    "<|end_header_id|>": 128007,
    "<|eom_id|>": 128008,
    "<|eot_id|>": 128009,
    "<|python_tag|>": 128010,
}

TEMPLATE = (
    "{%- macro header(role) -%}{{- '<|start_header_id|>' + role + '<|end_header_id|>\\n\\n' -}}{%- endmacro -%}"
    "{%- set date = date_string if date_string is defined else '26 Jul 2024' -%}"
    "{%- set in_user = tools_in_user_message if tools_in_user_message is defined else true -%}"
    "{%- set builtin = builtin_tools if builtin_tools is defined else none -%}"
    "{%- set rest = messages -%}"
    "{%- set sys = '' -%}"
    "{%- if messages and messages[0].role == 'system' -%}"
    "{%- set sys = messages[0].content | trim -%}{%- set rest = messages[1:] -%}"
    "{%- endif -%}"
    "{%- macro declare_tools(tools) -%}"
    "{{- 'Answer with a JSON function call that best answers the prompt, using the functions below.'"
    ' + \'\\n\\nRespond in the format {"name": function name, "parameters": dictionary of argument\''
    " + ' name and its value}. Do not use variables.\\n\\n' -}}"
    "{%- for tool in tools -%}{{- (tool | tojson(indent=4)) + '\\n\\n' -}}{%- endfor -%}"
    "{%- endmacro -%}"
    "{{- bos_token + header('system') -}}"
    "{%- if builtin is not none or tools -%}{{- 'Environment: ipython\\n' -}}{%- endif -%}"
    "{%- if builtin is not none -%}{{- 'Tools: ' + builtin | reject('equalto', 'code_interpreter') | join(', ') + '\\n\\n' -}}{%- endif -%}"
    "{{- 'Cutting Knowledge Date: December 2023\\nToday Date: ' + date + '\\n\\n' -}}"
    "{%- if tools and not in_user -%}{{- declare_tools(tools) -}}{%- endif -%}"
    "{{- sys + '<|eot_id|>' -}}"
    "{%- set ns = namespace(declared=not (tools and in_user)) -%}"
    "{%- for m in rest -%}"
    "{%- if m.role == 'user' and not ns.declared -%}"
    "{{- header('user') + declare_tools(tools) + (m.content | trim) + '<|eot_id|>' -}}"
    "{%- set ns.declared = true -%}"
    "{%- elif m.role in ('tool', 'ipython') -%}"
    "{{- header('ipython') + (m.content if m.content is string else m.content | tojson) + '<|eot_id|>' -}}"
    "{%- elif m.role == 'assistant' and m.tool_calls -%}"
    "{%- if m.tool_calls | length != 1 -%}{{- raise_exception('one tool call per assistant turn') -}}{%- endif -%}"
    "{%- set call = m.tool_calls[0].function if m.tool_calls[0].function is defined else m.tool_calls[0] -%}"
    "{{- header('assistant') -}}"
    "{%- if builtin is not none and call.name in builtin -%}"
    "{{- '<|python_tag|>' + call.name + '.call(' -}}"
    "{%- for key, value in call.arguments.items() -%}{{- (', ' if not loop.first else '') + key + '=\"' + value + '\"' -}}{%- endfor -%}"
    "{{- ')<|eom_id|>' -}}"
    "{%- else -%}"
    "{{- '{\"name\": \"' + call.name + '\", \"parameters\": ' + (call.arguments | tojson) + '}' -}}"
    "{{- '<|eom_id|>' if builtin is not none else '<|eot_id|>' -}}"
    "{%- endif -%}"
    "{%- else -%}"
    "{{- header(m.role) + (m.content | trim) + '<|eot_id|>' -}}"
    "{%- endif -%}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{- header('assistant') -}}{%- endif -%}"
)

RECIPE = TokenizerRecipe(
    specials=SPECIALS,
    vocab_size=VOCAB_SIZE,
    template=TEMPLATE,
    eos="<|eot_id|>",
    bos="<|begin_of_text|>",
    add_bos=True,
    extra_config={"pad_token": "<|finetune_right_pad_id|>"},
)


def build(directory: Path) -> Path:
    return build_tokenizer(directory, RECIPE)
