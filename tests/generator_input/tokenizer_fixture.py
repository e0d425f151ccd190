"""Small offline tokenizers for the input-side tests, built with `tokenizers` in a few lines.

Byte-level, no merges (every byte is a token), padded to Kimi-K2's 163,840 ids with the chat
special tokens at Kimi's real ids, so ids above 65,535 and single-id specials are exercised
without the real model. The chat template is a compact Kimi-like one: tools are declared in a
`tool_declare` system turn and the generation prompt ends with `<think>` when `thinking` is set.
Variants break one thing each, for the integrity tests.
"""

from __future__ import annotations

from pathlib import Path

VOCAB_SIZE = 163_840
SPECIALS = {
    "<|im_end|>": 163586,
    "<|im_user|>": 163587,
    "<|im_assistant|>": 163588,
    "<|im_system|>": 163594,
    "<|tool_calls_section_begin|>": 163595,
    "<|tool_calls_section_end|>": 163596,
    "<|tool_call_begin|>": 163597,
    "<|tool_call_argument_begin|>": 163598,
    "<|tool_call_end|>": 163599,
    "<|im_middle|>": 163601,
    "<think>": 163606,
    "</think>": 163607,
}
THINK = SPECIALS["<think>"]

TOOLS_BLOCK = (
    "{%- if tools -%}<|im_system|>tool_declare<|im_middle|>{{ tools | tojson }}<|im_end|>"
    "{%- endif -%}"
)
BODY = (
    "{%- for m in messages -%}"
    "{%- if m.role == 'system' -%}<|im_system|>system<|im_middle|>{{ m.content }}<|im_end|>"
    "{%- elif m.role == 'user' -%}<|im_user|>user<|im_middle|>{{ m.content }}<|im_end|>"
    "{%- elif m.role == 'assistant' -%}<|im_assistant|>assistant<|im_middle|>{{ m.content }}"
    "{%- if m.tool_calls -%}<|tool_calls_section_begin|>{%- for c in m.tool_calls -%}"
    "<|tool_call_begin|>{{ c.id }}<|tool_call_argument_begin|>{{ c.function.arguments | tojson }}"
    "<|tool_call_end|>{%- endfor -%}<|tool_calls_section_end|>{%- endif -%}<|im_end|>"
    "{%- elif m.role == 'tool' -%}<|im_system|>tool<|im_middle|>## Return of {{ m.tool_call_id }}\n"
    "{{ m.content }}<|im_end|>"
    "{%- endif -%}{%- endfor -%}"
)
GEN = (
    "{%- if add_generation_prompt -%}<|im_assistant|>assistant<|im_middle|>"
    "{%- if thinking -%}<think>{%- endif -%}{%- endif -%}"
)

KIMI_LIKE = TOOLS_BLOCK + BODY + GEN
DROPS_TOOLS = BODY + GEN
NO_SYSTEM = (
    "{%- for m in messages -%}{%- if m.role == 'system' -%}"
    "{{ raise_exception('system messages are not supported') }}{%- endif -%}{%- endfor -%}"
    + KIMI_LIKE
)


ONE_TOOL_ONLY = TOOLS_BLOCK.replace("if tools", "if tools and tools | length == 1") + BODY + GEN
WITH_BOS = "{{ bos_token }}" + KIMI_LIKE
BOS = "[BOS]"


def build_tokenizer(
    directory: Path,
    template: str | None = KIMI_LIKE,
    specials: dict[str, int] = SPECIALS,
    bos: bool = False,
) -> Path:
    """Write a tokenizer directory loadable by `AutoTokenizer.from_pretrained`; with `bos`,
    encoding adds a BOS token by itself (as Llama-style tokenizers do)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    byte_chars = pre_tokenizers.ByteLevel.alphabet()
    vocab = {ch: i for i, ch in enumerate(sorted(byte_chars))}
    by_id = {i: t for t, i in specials.items()}
    for i in range(len(vocab), VOCAB_SIZE):
        vocab[by_id.get(i, f"<|reserved_{i}|>")] = i
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens(list(specials))
    extra = {}
    if bos:
        tok.add_special_tokens([BOS])
        tok.post_processor = processors.TemplateProcessing(
            single=f"{BOS} $A", special_tokens=[(BOS, tok.token_to_id(BOS))]
        )
        extra["bos_token"] = BOS
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>", **extra)
    if template is not None:
        fast.chat_template = template
    directory.mkdir(parents=True, exist_ok=True)
    fast.save_pretrained(directory)
    return directory
