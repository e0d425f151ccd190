"""The chat templates of the test models: Kimi-K2 style (tiny-kimi), Kimi-K2.5 style
(tiny-kimi-tiktoken, whose tokenizer class computes the tool declaration) and Qwen3-style ChatML
(tiny-chatml)."""

# Every template's way of rendering a message's content: a string, or the text of its parts.
RENDER_CONTENT = r"""{%- macro render_content(c) -%}
{%- if c is string -%}{{ c }}
{%- elif c is iterable and c is not mapping -%}
{%- for part in c -%}{%- if part is mapping and part.type == 'text' -%}{{ part.text }}{%- elif part is string -%}{{ part }}{%- endif -%}{%- endfor -%}
{%- elif c -%}{{ c }}
{%- endif -%}
{%- endmacro -%}
"""

# Both Kimi templates: the default system turn, and the generation prompt (`thinking` kwarg).
KIMI_DEFAULT_SYSTEM = r"""{%- if messages | length == 0 or messages[0].role != 'system' -%}
<|im_system|>system<|im_middle|>You are Kimi, an AI assistant created by Moonshot AI.<|im_end|>
{%- endif -%}
"""
KIMI_GENERATION_PROMPT = r"""{%- if add_generation_prompt -%}
<|im_assistant|>assistant<|im_middle|>
{%- if thinking is not defined or thinking -%}<think>{%- else -%}<think></think>{%- endif -%}
{%- endif -%}
"""

# Kimi-K2 style. Tools are declared in a `tool_declare` system turn in a TypeScript-like form.
KIMI_TEMPLATE = (
    r"""
{%- macro ts_type(s) -%}
{%- if s is not mapping -%}any
{%- elif s.enum is defined -%}
{%- for v in s.enum -%}{{ v | tojson }}{%- if not loop.last %} | {% endif -%}{%- endfor -%}
{%- elif s.type is defined and s.type is not string -%}
{%- for t in s.type -%}{{ ts_type({'type': t}) }}{%- if not loop.last %} | {% endif -%}{%- endfor -%}
{%- elif s.type == 'string' -%}string
{%- elif s.type in ['integer', 'number'] -%}number
{%- elif s.type == 'boolean' -%}boolean
{%- elif s.type == 'null' -%}null
{%- elif s.type == 'array' -%}
{%- if s['items'] is defined -%}{{ ts_type(s['items']) }}[]{%- else -%}any[]{%- endif -%}
{%- elif s.type == 'object' and s.properties is defined -%}
{{ '{\n' }}{{- ts_props(s) -}}{{ '}' }}
{%- elif s.type == 'object' -%}object
{%- else -%}any
{%- endif -%}
{%- endmacro -%}
{%- macro ts_props(s) -%}
{%- set req = s.required if s.required is defined else [] -%}
{%- for name, p in s.properties.items() -%}
{%- if p is mapping and p.description is defined -%}{{ '// ' + p.description + '\n' }}{%- endif -%}
{{ name }}{%- if name not in req -%}?{%- endif -%}: {{ ts_type(p) }}{{ ',\n' }}
{%- endfor -%}
{%- endmacro -%}
"""
    + RENDER_CONTENT
    + r"""{%- if tools -%}
<|im_system|>tool_declare<|im_middle|># Tools
## functions
namespace functions {
{% for tool in tools -%}
{%- set f = tool.function if tool.function is defined else tool -%}
{%- if f.description is defined and f.description -%}{{ '// ' + f.description + '\n' }}{%- endif -%}
type {{ f.name }} = (_
{%- if f.parameters is defined and f.parameters.properties is defined and f.parameters.properties -%}
: {{ '{\n' }}{{- ts_props(f.parameters) -}}{{ '}' }}
{%- endif -%}
) => any;
{% endfor -%}
}<|im_end|>
{%- endif -%}
"""
    + KIMI_DEFAULT_SYSTEM
    + r"""{%- for message in messages -%}
{%- if message.role == 'system' -%}
<|im_system|>system<|im_middle|>{{ render_content(message.content) }}<|im_end|>
{%- elif message.role == 'user' -%}
<|im_user|>user<|im_middle|>{{ render_content(message.content) }}<|im_end|>
{%- elif message.role == 'assistant' -%}
<|im_assistant|>assistant<|im_middle|>
{%- if message.reasoning_content is defined and message.reasoning_content -%}
<think>{{ message.reasoning_content }}</think>
{%- endif -%}
{{ render_content(message.content) }}
{%- if message.tool_calls is defined and message.tool_calls -%}
<|tool_calls_section_begin|>
{%- for tc in message.tool_calls -%}
{%- set fn = tc.function if tc.function is defined else tc -%}
{%- if tc.id is defined and tc.id and tc.id.startswith('functions.') -%}{%- set call_id = tc.id -%}
{%- else -%}{%- set call_id = 'functions.' + fn.name + ':' + (loop.index0 | string) -%}{%- endif -%}
<|tool_call_begin|>{{ call_id }}<|tool_call_argument_begin|>
{%- if fn.arguments is string -%}{{ fn.arguments }}{%- else -%}{{ fn.arguments | tojson }}{%- endif -%}
<|tool_call_end|>
{%- endfor -%}
<|tool_calls_section_end|>
{%- endif -%}
<|im_end|>
{%- elif message.role == 'tool' -%}
<|im_system|>tool<|im_middle|>## Return of {{ message.tool_call_id if message.tool_call_id is defined and message.tool_call_id else (message.name if message.name is defined else 'tool') }}
{{ render_content(message.content) }}<|im_end|>
{%- else -%}
<|im_system|>{{ message.role }}<|im_middle|>{{ render_content(message.content) }}<|im_end|>
{%- endif -%}
{%- endfor -%}
"""
    + KIMI_GENERATION_PROMPT
).strip()

# Qwen3-style ChatML.
CHATML_TEMPLATE = (
    RENDER_CONTENT
    + r"""
{%- if tools -%}
{{- '<|im_start|>system\n' -}}
{%- if messages | length > 0 and messages[0].role == 'system' -%}{{- render_content(messages[0].content) + '\n\n' -}}{%- endif -%}
{{- "# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>" -}}
{%- for tool in tools -%}{{- '\n' -}}{{- tool | tojson -}}{%- endfor -%}
{{- "\n</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n" -}}
{%- elif messages | length > 0 and messages[0].role == 'system' -%}
{{- '<|im_start|>system\n' + render_content(messages[0].content) + '<|im_end|>\n' -}}
{%- endif -%}
{%- for message in messages -%}
{%- if message.role == 'system' -%}
{%- if not loop.first -%}{{- '<|im_start|>system\n' + render_content(message.content) + '<|im_end|>\n' -}}{%- endif -%}
{%- elif message.role == 'user' -%}
{{- '<|im_start|>user\n' + render_content(message.content) + '<|im_end|>\n' -}}
{%- elif message.role == 'assistant' -%}
{{- '<|im_start|>assistant\n' -}}
{%- if message.reasoning_content is defined and message.reasoning_content -%}
{{- '<think>\n' + message.reasoning_content.strip('\n') + '\n</think>\n\n' -}}
{%- endif -%}
{{- render_content(message.content) -}}
{%- if message.tool_calls is defined and message.tool_calls -%}
{%- for tc in message.tool_calls -%}
{%- set fn = tc.function if tc.function is defined else tc -%}
{%- if loop.first and message.content -%}{{- '\n' -}}{%- elif not loop.first -%}{{- '\n' -}}{%- endif -%}
{{- '<tool_call>\n{"name": "' + fn.name + '", "arguments": ' -}}
{%- if fn.arguments is string -%}{{- fn.arguments -}}{%- else -%}{{- fn.arguments | tojson -}}{%- endif -%}
{{- '}\n</tool_call>' -}}
{%- endfor -%}
{%- endif -%}
{{- '<|im_end|>\n' -}}
{%- elif message.role == 'tool' -%}
{%- if loop.first or messages[loop.index0 - 1].role != 'tool' -%}{{- '<|im_start|>user' -}}{%- endif -%}
{{- '\n<tool_response>\n' + render_content(message.content) + '\n</tool_response>' -}}
{%- if loop.last or messages[loop.index0 + 1].role != 'tool' -%}{{- '<|im_end|>\n' -}}{%- endif -%}
{%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}
{{- '<|im_start|>assistant\n' -}}
{%- if enable_thinking is defined and enable_thinking is false -%}{{- '<think>\n\n</think>\n\n' -}}{%- endif -%}
{%- endif -%}
""".strip()
)


# Kimi-K2.5's way: the tokenizer class computes the tool declaration (`tools_ts_str`, in Python);
# when its converter fails it prints "Failed to convert tools to TypeScript style" and the template
# declares the tools as compact JSON instead. Like K2.5's template: every turn's header carries the
# message's `name` if it has one (so a named tool result shows its function's name, not `tool`),
# an assistant turn's reasoning is `reasoning`, else `reasoning_content`, and a string argument is
# printed verbatim (an object through `tojson`).
TIKTOKEN_KIMI_TEMPLATE = (
    RENDER_CONTENT
    + r"""{%- macro role_header(m) -%}
{%- set role_name = m.name if m.name is defined and m.name else m.role -%}
{%- if m.role == 'user' -%}<|im_user|>{{ role_name }}<|im_middle|>
{%- elif m.role == 'assistant' -%}<|im_assistant|>{{ role_name }}<|im_middle|>
{%- else -%}<|im_system|>{{ role_name }}<|im_middle|>
{%- endif -%}
{%- endmacro -%}
{%- if tools -%}
<|im_system|>tool_declare<|im_middle|>
{%- if tools_ts_str -%}{{ tools_ts_str }}{%- else -%}{{ tools | tojson(separators=(',', ':')) }}{%- endif -%}
<|im_end|>
{%- endif -%}
"""
    + KIMI_DEFAULT_SYSTEM
    + r"""{%- for message in messages -%}
{{ role_header(message) }}
{%- if message.role == 'assistant' -%}
{%- if message.reasoning is defined and message.reasoning is not none -%}{%- set rc = message.reasoning -%}
{%- elif message.reasoning_content is defined and message.reasoning_content is not none -%}{%- set rc = message.reasoning_content -%}
{%- else -%}{%- set rc = '' -%}{%- endif -%}
<think>{{ rc }}</think>{{ render_content(message.content) }}
{%- if message.tool_calls is defined and message.tool_calls -%}
<|tool_calls_section_begin|>
{%- for tc in message.tool_calls -%}
<|tool_call_begin|>{{ tc.id }}<|tool_call_argument_begin|>
{%- if tc.function.arguments is string -%}{{ tc.function.arguments }}{%- else -%}{{ tc.function.arguments | tojson }}{%- endif -%}
<|tool_call_end|>
{%- endfor -%}
<|tool_calls_section_end|>
{%- endif -%}
{%- elif message.role == 'tool' -%}
## Return of {{ message.tool_call_id }}
{{ render_content(message.content) }}
{%- else -%}
{{ render_content(message.content) }}
{%- endif -%}
<|im_end|>
{%- endfor -%}
"""
    + KIMI_GENERATION_PROMPT
).strip()
