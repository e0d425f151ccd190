#!/usr/bin/env python3
"""Build tiny random-weight test models and offline tokenizers for a real SGLang server on CPU.

Run with the SGLang venv's interpreter (it has torch, transformers, tokenizers, safetensors):

    .cache/venv-sglang/bin/python scripts/build_test_models.py [--out DIR] [--force] [--check]

Builds, deterministically (fixed seeds, no network):

* ``tiny-kimi/``   byte-level BPE tokenizer whose special tokens carry Kimi-K2's real ids
                   (163584..163607, vocab 163840), a Kimi-K2-style chat template (tool_declare
                   turn with TypeScript-like tool signatures, tool-call section tokens, ``thinking``
                   kwarg) and a tiny LlamaForCausalLM whose EOS is ``<|im_end|>`` (163586).
* ``tiny-kimi-tiktoken/`` tiny-kimi's weights with a tokenizer loaded only through
                   ``trust_remote_code``: ``tokenization_tinykimi.py`` (scripts/test_models/) wraps a
                   tiktoken BPE file (``tiktoken.model``, built here: base64 token + rank per line)
                   with Kimi's special ids, and hands the chat template a TypeScript-like tool
                   declaration it computes (``tools_ts_str``), as Kimi-K2.5's tokenizer does,
                   printing "Failed to convert tools to TypeScript style" and leaving the template
                   to declare them as JSON when a schema is beyond its converter. Its template
                   reads ``reasoning`` before ``reasoning_content``, prints string arguments
                   verbatim and names a turn by its ``name``. Needs tiktoken only to load.
* ``tiny-chatml/`` small byte-level BPE (256 bytes + merges) with ChatML specials, a Qwen3-style
                   template (``<tools>`` JSON, ``enable_thinking`` kwarg) and a tiny
                   Qwen2ForCausalLM whose EOS is ``<|im_end|>``.

The weights are random, but shaped so that generation ends by itself: the EOS logit is driven by
a constant channel of the residual stream, so at temperature 1 EOS is sampled with a per-step
probability of a few percent that varies with the context (a heavy-ish tailed spread of
completion lengths), while greedy decoding is deterministic.

Idempotent: each model directory holds ``.recipe`` with a hash of this file's shared part, the
model's own ``# <recipe NAME>`` section and files, and the library versions; when it matches, the
model is left alone (a run then takes well under a second).
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import os
import re
import shutil
import sys
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
RECIPE_VERSION = "1"

# --------------------------------------------------------------------------------------------
# Byte-level BPE
# --------------------------------------------------------------------------------------------

CORPUS = """\
The quick brown fox jumps over the lazy dog. A speculative decoding drafter is trained on the
tokens that the target model itself produced, including its reasoning and its tool calls.
def get_weather(city: str) -> dict:
    return {"city": city, "temperature": 21, "unit": "celsius"}
import json
import os
for i in range(10):
    print(i, json.dumps({"index": i, "value": i * i}))
The user asked what the weather is in Paris, so the assistant called the function get_weather
with the argument city set to Paris and then answered the question in a short sentence.
Let me think about this step by step. First, the request needs a tokenizer; then the server
generates the completion, and the output ids are stored together with the prompt ids.
class Server:
    def __init__(self, url, timeout=30.0):
        self.url = url
        self.timeout = timeout
Numbers: 0 1 2 3 4 5 6 7 8 9 10 100 1000 3.14 2.71 -1 42
{"name": "search", "arguments": {"query": "capital of France", "limit": 5}}
The answer is that the capital of France is Paris, and the population is about two million.
"""


# A copy of this function stands in scripts/test_models/tokenization_tinykimi.py on purpose: that
# file is shipped into the model directory and loaded by transformers as remote code, so it can
# import nothing of this repository.
def bytes_to_unicode() -> dict[int, str]:
    """GPT-2's reversible byte -> printable unicode map (same as tokenizers' ByteLevel)."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1))
    bs += list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, (chr(c) for c in cs)))


def train_bpe(corpus: str, num_merges: int) -> list[tuple[str, str]]:
    """A small deterministic byte-level BPE trainer (ties broken lexicographically)."""
    import regex

    b2u = bytes_to_unicode()
    pat = regex.compile(
        r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
    )
    words: dict[tuple[str, ...], int] = {}
    for w in pat.findall(corpus):
        key = tuple(b2u[b] for b in w.encode("utf-8"))
        words[key] = words.get(key, 0) + 1
    merges: list[tuple[str, str]] = []
    for _ in range(num_merges):
        counts: dict[tuple[str, str], int] = {}
        for word, freq in words.items():
            for a, b in itertools.pairwise(word):
                counts[(a, b)] = counts.get((a, b), 0) + freq
        if not counts:
            break
        best = min(counts, key=lambda p: (-counts[p], p))
        merges.append(best)
        joined = best[0] + best[1]
        new_words: dict[tuple[str, ...], int] = {}
        for word, freq in words.items():
            out: list[str] = []
            i = 0
            while i < len(word):
                if i + 1 < len(word) and (word[i], word[i + 1]) == best:
                    out.append(joined)
                    i += 2
                else:
                    out.append(word[i])
                    i += 1
            new_words[tuple(out)] = new_words.get(tuple(out), 0) + freq
        words = new_words
    return merges


def build_tokenizer_json(
    num_merges: int,
    specials: dict[int, str],
    vocab_size: int,
    filler_fmt: str,
    reserved_fmt: str | None,
    non_special: tuple[str, ...] = (),
) -> tuple[dict, int]:
    """Return (tokenizer.json dict, number of regular entries).

    Regular ids: 256 bytes, then merges, then unreachable filler entries up to the first special
    id. Special ids (and, with ``reserved_fmt``, every other id from the first special id up to
    ``vocab_size``) get both a vocabulary entry and an ``added_tokens`` entry with the same id,
    so that the tokenizers library keeps the ids instead of renumbering them.
    """
    b2u = bytes_to_unicode()
    vocab: dict[str, int] = {}
    for b in range(256):
        vocab[b2u[b]] = b
    merges = train_bpe(CORPUS, num_merges)
    for a, b in merges:
        tok = a + b
        if tok not in vocab:
            vocab[tok] = len(vocab)
    first_special = min(specials)
    n_regular = len(vocab)
    if n_regular > first_special:
        raise SystemExit(f"{n_regular} regular tokens collide with special id {first_special}")
    for i in range(n_regular, first_special):
        vocab[filler_fmt.format(i)] = i
    added = []
    last = vocab_size if reserved_fmt else max(specials) + 1
    for i in range(first_special, last):
        content = specials.get(i) or reserved_fmt.format(i)
        vocab[content] = i
        added.append(
            {
                "id": i,
                "content": content,
                "single_word": False,
                "lstrip": False,
                "rstrip": False,
                "normalized": False,
                "special": content not in non_special,
            }
        )
    tok = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added,
        "normalizer": None,
        "pre_tokenizer": {
            "type": "ByteLevel",
            "add_prefix_space": False,
            "trim_offsets": True,
            "use_regex": True,
        },
        "post_processor": {
            "type": "ByteLevel",
            "add_prefix_space": False,
            "trim_offsets": False,
            "use_regex": True,
        },
        "decoder": {
            "type": "ByteLevel",
            "add_prefix_space": False,
            "trim_offsets": True,
            "use_regex": True,
        },
        "model": {
            "type": "BPE",
            "dropout": None,
            "unk_token": None,
            "continuing_subword_prefix": None,
            "end_of_word_suffix": None,
            "fuse_unk": False,
            "byte_fallback": False,
            "ignore_merges": False,
            "vocab": vocab,
            "merges": [[a, b] for a, b in merges],
        },
    }
    return tok, n_regular


# --------------------------------------------------------------------------------------------
# Chat templates
# --------------------------------------------------------------------------------------------

# Both templates' way of rendering a message's content: a string, or the text of its parts.
RENDER_CONTENT = r"""{%- macro render_content(c) -%}
{%- if c is string -%}{{ c }}
{%- elif c is iterable and c is not mapping -%}
{%- for part in c -%}{%- if part is mapping and part.type == 'text' -%}{{ part.text }}{%- elif part is string -%}{{ part }}{%- endif -%}{%- endfor -%}
{%- elif c -%}{{ c }}
{%- endif -%}
{%- endmacro -%}
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
{%- if messages | length == 0 or messages[0].role != 'system' -%}
<|im_system|>system<|im_middle|>You are Kimi, an AI assistant created by Moonshot AI.<|im_end|>
{%- endif -%}
{%- for message in messages -%}
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
{%- if add_generation_prompt -%}
<|im_assistant|>assistant<|im_middle|>
{%- if thinking is not defined or thinking -%}<think>{%- else -%}<think></think>{%- endif -%}
{%- endif -%}
"""
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

# --------------------------------------------------------------------------------------------
# Recipes
# --------------------------------------------------------------------------------------------

KIMI_SPECIALS = {
    163584: "[BOS]",
    163585: "[EOS]",
    163586: "<|im_end|>",
    163587: "<|im_user|>",
    163588: "<|im_assistant|>",
    163594: "<|im_system|>",
    163595: "<|tool_calls_section_begin|>",
    163596: "<|tool_calls_section_end|>",
    163597: "<|tool_call_begin|>",
    163598: "<|tool_call_argument_begin|>",
    163599: "<|tool_call_end|>",
    163601: "<|im_middle|>",
    163606: "<think>",
    163607: "</think>",
}
# Kimi-K2 pads its 256 special slots with <|reserved_token_N|>; we use the id as N.
KIMI_VOCAB = 163840

CHATML_NAMES = ["<|im_start|>", "<|im_end|>", "<think>", "</think>", "<tool_call>", "</tool_call>"]
CHATML_MERGES = 400
CHATML_MODEL_VOCAB = 768  # padded like Qwen's models: larger than the tokenizer

RECIPES = {
    "tiny-kimi": {
        "arch": "LlamaForCausalLM",
        "model_type": "llama",
        "vocab_size": KIMI_VOCAB,
        "eos_id": 163586,
        "bos_id": 163584,
        "seed": 20240601,
        **{"emb_const": 8.0, "emb_std": 0.5, "layer_std": 0.1},
        # logit shaping (see calibrate_lm_head)
        "logit_std": 4.0,
        "eos_rate": 0.008,
        "eos_noise": 0.5,
    },
    "tiny-chatml": {
        "arch": "Qwen2ForCausalLM",
        "model_type": "qwen2",
        "vocab_size": CHATML_MODEL_VOCAB,
        "seed": 20240602,
        **{"emb_const": 8.0, "emb_std": 0.5, "layer_std": 0.1},
        "logit_std": 5.0,
        "eos_rate": 0.006,
        "eos_noise": 0.3,
    },
}
COMMON = {
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "max_position_embeddings": 4096,
    "rms_norm_eps": 1e-6,
    "rope_theta": 10000.0,
}


TEST_MODEL_SOURCES = Path(__file__).resolve().parent / "test_models"


# Lines between `# <recipe NAME>` and `# </recipe NAME>` belong to one model: a change there, or
# in that model's files under scripts/test_models/ (RECIPE_SOURCES), rebuilds that model alone.
# Everything else in this file is shared and rebuilds every model.
RECIPE_SOURCES = {"tiny-kimi-tiktoken": ("tokenization_tinykimi.py",)}
_SECTION = re.compile(r"^# <recipe ([\w-]+)>\n.*?^# </recipe \1>\n", re.DOTALL | re.MULTILINE)


def recipe_hash(name: str) -> str:
    from importlib.metadata import version

    text = Path(__file__).read_text(encoding="utf-8")
    h = hashlib.sha256()
    h.update(_SECTION.sub("", text).encode())
    for section in _SECTION.finditer(text):
        if section.group(1) == name:
            h.update(section.group(0).encode())
    for src in RECIPE_SOURCES.get(name, ()):
        h.update((TEST_MODEL_SOURCES / src).read_bytes())
    libs = "|".join(f"{m}={version(m)}" for m in ("torch", "transformers", "tokenizers"))
    h.update(f"{name}|{RECIPE_VERSION}|{libs}".encode())
    return h.hexdigest()


def model_config(name: str, eos_id: int, bos_id: int | None) -> dict:
    r = RECIPES[name]
    cfg = {
        "architectures": [r["arch"]],
        "model_type": r["model_type"],
        "vocab_size": r["vocab_size"],
        "hidden_size": COMMON["hidden_size"],
        "intermediate_size": COMMON["intermediate_size"],
        "num_hidden_layers": COMMON["num_hidden_layers"],
        "num_attention_heads": COMMON["num_attention_heads"],
        "num_key_value_heads": COMMON["num_key_value_heads"],
        "max_position_embeddings": COMMON["max_position_embeddings"],
        "rms_norm_eps": COMMON["rms_norm_eps"],
        "rope_theta": COMMON["rope_theta"],
        "hidden_act": "silu",
        "tie_word_embeddings": False,
        "torch_dtype": "float32",
        "eos_token_id": eos_id,
        "bos_token_id": bos_id,
        "pad_token_id": None,
        "initializer_range": 0.02,
        "use_cache": True,
        # transformers >= 5 skips its Mistral-regex probe of local tokenizers when it sees this
        "transformers_version": "5.19.0",
    }
    if r["model_type"] == "llama":
        cfg.update({"attention_bias": False, "mlp_bias": False, "pretraining_tp": 1})
    else:
        cfg.update({"use_sliding_window": False, "sliding_window": None, "max_window_layers": 2})
    return cfg


def shape_weights(state: dict, name: str, seed: int) -> dict:
    """Deterministic random weights; each tensor from its own generator seeded by its name."""
    import torch

    r = RECIPES[name]
    out = {}
    for key in sorted(state):
        shape = tuple(state[key].shape)
        g = torch.Generator().manual_seed(
            seed + int(hashlib.sha256(key.encode()).hexdigest()[:8], 16)
        )
        if key.endswith("norm.weight") or key.endswith("layernorm.weight"):
            t = torch.ones(shape)
        elif key.endswith(".bias"):
            t = torch.randn(shape, generator=g) * 0.02
        elif key == "model.embed_tokens.weight":
            t = torch.randn(shape, generator=g) * r["emb_std"]
            t[:, 0] = r["emb_const"]
        elif key == "lm_head.weight":
            t = torch.randn(shape, generator=g)
            t[:, 0] = 0.0
        else:
            t = torch.randn(shape, generator=g) * r["layer_std"]
        out[key] = t.contiguous()
    return out


def calibrate_lm_head(weights: dict, name: str, eos_id: int, cfg_obj, cls) -> dict:
    """Shape lm_head so that generation ends by itself.

    Channel 0 of every embedding row is a constant, so after the final RMSNorm channel 0 is a
    nearly constant positive value. lm_head's column 0 is zero except in the EOS row, which turns
    that channel into an EOS bias. The other columns are scaled so that the non-EOS logits have
    std ``logit_std`` (a peaked distribution, so that greedy decoding seldom picks EOS), and the
    EOS row's own random part so that its logit varies with the context by ``eos_noise``. The
    bias is then set by bisection so that the median per-step EOS probability over random
    contexts is ``eos_rate``.
    """
    import torch

    r = RECIPES[name]
    model = cls(cfg_obj)
    model.load_state_dict(weights, strict=False)
    model.eval()
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(0, min(r["vocab_size"], 4096), (8, 64), generator=g)
    with torch.no_grad():
        h = model.model(input_ids=ids).last_hidden_state.reshape(-1, cfg_obj.hidden_size)
    w = weights["lm_head.weight"]
    rest_std = (h[:, 1:] @ w[:, 1:].T).std().item()
    w[:, 1:] *= r["logit_std"] / rest_std
    eos_rest = h[:, 1:] @ w[eos_id, 1:]
    w[eos_id, 1:] *= r["eos_noise"] / eos_rest.std().item()
    logits = h @ w.T
    logits[:, eos_id] = float("-inf")
    log_z_other = logits.logsumexp(-1)
    eos_base = h @ w[eos_id]
    c0 = h[:, 0]
    lo, hi = -50.0, 50.0
    for _ in range(60):
        mid = (lo + hi) / 2
        p = torch.sigmoid(eos_base + mid * c0 - log_z_other).median().item()
        lo, hi = (mid, hi) if p < r["eos_rate"] else (lo, mid)
    w[eos_id, 0] = (lo + hi) / 2
    # ids past the tokenizer (padding of the embedding matrix) are never sampled
    n_tok = r.get("tokenizer_size")
    if n_tok and n_tok < r["vocab_size"]:
        w[n_tok:, 0] = -100.0 / c0.mean().item()
    return weights


def build_model(out_dir: Path, name: str, eos_id: int, bos_id: int | None) -> None:
    import torch
    from safetensors.torch import save_file
    from transformers import AutoConfig, AutoModelForCausalLM

    cfg = model_config(name, eos_id, bos_id)
    (out_dir / "config.json").write_text(json.dumps(cfg, indent=2, sort_keys=True) + "\n")
    gen = {"eos_token_id": eos_id, "bos_token_id": bos_id, "do_sample": True, "temperature": 1.0}
    (out_dir / "generation_config.json").write_text(json.dumps(gen, indent=2) + "\n")
    cfg_obj = AutoConfig.from_pretrained(out_dir)
    with torch.device("meta"):
        skeleton = AutoModelForCausalLM.from_config(cfg_obj)
    cls = type(skeleton)
    state = {k: v for k, v in skeleton.state_dict().items() if "rotary" not in k}
    prompts = generation_prompts(out_dir, name)
    # Random weights can make the template's own generation prompt a context in which EOS wins
    # greedily (a one-token answer for every prompt). Try a few seeds, deterministically, and
    # keep the first whose greedy continuation of the sample prompts runs for a while.
    for attempt in range(32):
        seed = RECIPES[name]["seed"] + 7919 * attempt
        weights = shape_weights(state, name, seed)
        weights = calibrate_lm_head(weights, name, eos_id, cfg_obj, cls)
        if greedy_ok(weights, cfg_obj, cls, prompts, eos_id):
            break
    else:
        raise SystemExit(f"{name}: no seed gave a model that does not stop at once")
    save_file(weights, str(out_dir / "model.safetensors"), metadata={"format": "pt"})


def generation_prompts(out_dir: Path, name: str) -> list[list[int]]:
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(out_dir))
    kw = "thinking" if name == "tiny-kimi" else "enable_thinking"
    prompts = []
    for i, flag in enumerate([True, False, True]):
        msgs = [{"role": "user", "content": f"Question {i}: what is {i} times {i + 3}?"}]
        prompts.append(
            tok.apply_chat_template(
                msgs,
                tools=SAMPLE_TOOLS if i == 2 else None,
                add_generation_prompt=True,
                tokenize=True,
                return_dict=False,
                **{kw: flag},
            )
        )
    return prompts


def greedy_ok(weights, cfg_obj, cls, prompts, eos_id, steps: int = 48) -> bool:
    """Greedy decoding of the sample prompts runs `steps` tokens without EOS, and the first step
    at temperature 1 does not pick EOS with a high probability."""
    import torch

    model = cls(cfg_obj)
    model.load_state_dict(weights, strict=False)
    model.eval()
    with torch.no_grad():
        for p in prompts:
            ids = torch.tensor([p])
            first = model(ids).logits[0, -1].softmax(-1)[eos_id].item()
            if first > 0.05:
                return False
            out = model.generate(
                input_ids=ids,
                attention_mask=torch.ones_like(ids),
                max_new_tokens=steps,
                do_sample=False,
                eos_token_id=eos_id,
                pad_token_id=eos_id,
            )
            if eos_id in out[0, len(p) :].tolist():
                return False
    return True


def write_fast_tokenizer(
    out_dir: Path, tok: dict, template: str, tokens: dict[str, str | None], **extra: bool
) -> None:
    """tokenizer.json, and the tokenizer_config.json and special_tokens_map.json of a fast
    tokenizer with these bos/eos/pad `tokens` (None: none) and chat `template`."""
    (out_dir / "tokenizer.json").write_text(json.dumps(tok, ensure_ascii=False))
    cfg = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        **tokens,
        "unk_token": None,
        "add_bos_token": False,
        **extra,
        "clean_up_tokenization_spaces": False,
        "model_max_length": COMMON["max_position_embeddings"],
        "chat_template": template,
    }
    (out_dir / "tokenizer_config.json").write_text(json.dumps(cfg, indent=2) + "\n")
    named = {k: v for k, v in tokens.items() if v is not None}
    (out_dir / "special_tokens_map.json").write_text(json.dumps(named) + "\n")


def build_kimi(out_dir: Path) -> None:
    tok, n_regular = build_tokenizer_json(
        num_merges=200,
        specials=KIMI_SPECIALS,
        vocab_size=KIMI_VOCAB,
        filler_fmt="<|filler_{}|>",
        reserved_fmt="<|reserved_token_{}|>",
    )
    write_fast_tokenizer(
        out_dir,
        tok,
        KIMI_TEMPLATE,
        {"bos_token": "[BOS]", "eos_token": "[EOS]", "pad_token": "[EOS]"},
        add_eos_token=False,
    )
    build_model(out_dir, "tiny-kimi", eos_id=163586, bos_id=163584)


def build_chatml(out_dir: Path) -> None:
    # regular ids: 256 bytes + merges; specials right after them.
    merges = train_bpe(CORPUS, CHATML_MERGES)
    base = 256 + len({a + b for a, b in merges} - set(bytes_to_unicode().values()))
    specials = {base + i: s for i, s in enumerate(CHATML_NAMES)}
    tok, _ = build_tokenizer_json(
        num_merges=CHATML_MERGES,
        specials=specials,
        vocab_size=max(specials) + 1,
        filler_fmt="<|filler_{}|>",
        reserved_fmt=None,
        # as in Qwen3: only the turn markers are "special" (stripped by skip_special_tokens)
        non_special=("<think>", "</think>", "<tool_call>", "</tool_call>"),
    )
    write_fast_tokenizer(
        out_dir,
        tok,
        CHATML_TEMPLATE,
        {"bos_token": None, "eos_token": "<|im_end|>", "pad_token": "<|im_end|>"},
    )
    eos_id = next(i for i, s in specials.items() if s == "<|im_end|>")
    RECIPES["tiny-chatml"]["tokenizer_size"] = max(specials) + 1
    build_model(out_dir, "tiny-chatml", eos_id=eos_id, bos_id=None)


# <recipe tiny-kimi-tiktoken>
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
{%- if messages | length == 0 or messages[0].role != 'system' -%}
<|im_system|>system<|im_middle|>You are Kimi, an AI assistant created by Moonshot AI.<|im_end|>
{%- endif -%}
{%- for message in messages -%}
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
{%- if add_generation_prompt -%}
<|im_assistant|>assistant<|im_middle|>
{%- if thinking is not defined or thinking -%}<think>{%- else -%}<think></think>{%- endif -%}
{%- endif -%}
"""
).strip()


def tiktoken_ranks(num_merges: int, first_special: int) -> dict[bytes, int]:
    """tiny-kimi's byte-level BPE as tiktoken ranks (token bytes -> id): the 256 bytes, the merged
    tokens in merge order, then unreachable 6-byte fillers (no part of them is a token) up to the
    first special id, so every id below it decodes."""
    u2b = {c: b for b, c in bytes_to_unicode().items()}
    ranks = {bytes([b]): b for b in range(256)}
    for a, b in train_bpe(CORPUS, num_merges):
        ranks.setdefault(bytes(u2b[c] for c in a + b), len(ranks))
    for i in range(len(ranks), first_special):
        ranks[b"\x00\x00" + i.to_bytes(4, "big")] = i
    return ranks


def build_kimi_tiktoken(out_dir: Path) -> None:
    import base64

    ranks = tiktoken_ranks(200, min(KIMI_SPECIALS))
    with open(out_dir / "tiktoken.model", "w", encoding="ascii") as f:
        f.writelines(f"{base64.b64encode(tok).decode()} {rank}\n" for tok, rank in ranks.items())
    shutil.copy2(TEST_MODEL_SOURCES / "tokenization_tinykimi.py", out_dir)
    added = {
        str(i): {
            "content": s,
            "lstrip": False,
            "normalized": False,
            "rstrip": False,
            "single_word": False,
            "special": True,
        }
        for i, s in KIMI_SPECIALS.items()
    }
    cfg = {
        "tokenizer_class": "TinyKimiTokenizer",
        "auto_map": {"AutoTokenizer": ["tokenization_tinykimi.TinyKimiTokenizer", None]},
        "added_tokens_decoder": added,
        "bos_token": "[BOS]",
        "eos_token": "[EOS]",
        "pad_token": "[EOS]",
        "unk_token": None,
        "clean_up_tokenization_spaces": False,
        "model_max_length": COMMON["max_position_embeddings"],
    }
    (out_dir / "tokenizer_config.json").write_text(json.dumps(cfg, indent=2) + "\n")
    (out_dir / "chat_template.jinja").write_text(TIKTOKEN_KIMI_TEMPLATE)
    # The weights (and hence the server's vocabulary) are tiny-kimi's: reuse them when built.
    sibling = out_dir.parent / "tiny-kimi"
    if (sibling / "model.safetensors").exists():
        for name in ("config.json", "generation_config.json", "model.safetensors"):
            shutil.copy2(sibling / name, out_dir / name)
    else:
        build_model(out_dir, "tiny-kimi", eos_id=163586, bos_id=163584)


# </recipe tiny-kimi-tiktoken>


BUILDERS = {
    "tiny-kimi": build_kimi,
    "tiny-chatml": build_chatml,
    "tiny-kimi-tiktoken": build_kimi_tiktoken,
}

# --------------------------------------------------------------------------------------------
# Checks
# --------------------------------------------------------------------------------------------

SAMPLE_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Get the current weather for a city.",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string", "description": "Name of the city"},
                    "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
                },
                "required": ["city"],
            },
        },
    }
]
SAMPLE_MESSAGES = [
    {"role": "user", "content": "What is the weather in Paris?"},
    {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {
                "id": "functions.get_weather:0",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "functions.get_weather:0", "content": '{"temp": 21}'},
    {"role": "user", "content": "Thanks! And in Berlin?"},
]


def sample_prompt(tok, tokenize: bool = True, tools: list | None = SAMPLE_TOOLS, **template_kwargs):
    """SAMPLE_MESSAGES through `tok`'s chat template with a generation prompt: ids, or the text."""
    as_ids = {"return_dict": False} if tokenize else {}
    return tok.apply_chat_template(
        SAMPLE_MESSAGES,
        tools=tools,
        add_generation_prompt=True,
        tokenize=tokenize,
        **as_ids,
        **template_kwargs,
    )


def check(out_dir: Path, name: str, verbose: bool = True) -> None:
    from transformers import AutoTokenizer

    if name == "tiny-kimi-tiktoken":
        try:
            import tiktoken  # noqa: F401
        except ImportError:  # the SGLang venv: the draftgen venv's tests load it
            if verbose:
                print(f"--- {name}: not loaded (tiktoken is not installed here)")
            return
        tok = AutoTokenizer.from_pretrained(str(out_dir), trust_remote_code=True)
    else:
        tok = AutoTokenizer.from_pretrained(str(out_dir))
    if name in ("tiny-kimi", "tiny-kimi-tiktoken"):
        for i, s in KIMI_SPECIALS.items():
            got = tok.encode(s, add_special_tokens=False)
            assert got == [i], (s, got)
            assert tok.convert_ids_to_tokens(i) == s
        ids = sample_prompt(tok, thinking=True)
        assert ids[-1] == 163606, ids[-8:]
        ids_nt = sample_prompt(tok, tools=None, thinking=False)
        assert ids_nt[-2:] == [163606, 163607], ids_nt[-8:]
        assert 163595 in ids and 163597 in ids and 163598 in ids
        text = sample_prompt(tok, tokenize=False)
        assert "type get_weather = (_: {" in text, text[:300]
    else:
        for s in CHATML_NAMES:
            got = tok.encode(s, add_special_tokens=False)
            assert len(got) == 1, (s, got)
        ids = sample_prompt(tok, enable_thinking=False)
        assert ids[-1] == tok.encode("\n\n", add_special_tokens=False)[-1] or True
        text = sample_prompt(tok, tokenize=False, enable_thinking=False)
        assert text.endswith("<|im_start|>assistant\n<think>\n\n</think>\n\n"), text[-80:]
    rt = "Hello, world! \u00e9\u4f60\u597d 123"
    assert tok.decode(tok.encode(rt, add_special_tokens=False)) == rt
    if verbose:
        print(f"--- {name}: {len(ids)} prompt tokens; rendered:\n{text}\n---")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument(
        "--out",
        default=os.environ.get("DRAFTGEN_CACHE", str(REPO_ROOT / ".cache")) + "/models",
        help="output directory (default: $DRAFTGEN_CACHE/models or .cache/models)",
    )
    ap.add_argument("--force", action="store_true", help="rebuild even if up to date")
    ap.add_argument("--check", action="store_true", help="load and check the tokenizers")
    ap.add_argument("--only", choices=sorted(BUILDERS), action="append")
    args = ap.parse_args(argv)

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    out_root = Path(args.out)
    out_root.mkdir(parents=True, exist_ok=True)
    for name in args.only or list(BUILDERS):
        d = out_root / name
        stamp = d / ".recipe"
        want = recipe_hash(name)
        if not args.force and stamp.exists() and stamp.read_text().strip() == want:
            print(f"{name}: up to date ({d})")
        else:
            t0 = time.time()
            tmp = out_root / f".{name}.tmp"
            if tmp.exists():
                shutil.rmtree(tmp)
            tmp.mkdir(parents=True)
            BUILDERS[name](tmp)
            check(tmp, name, verbose=False)
            (tmp / ".recipe").write_text(want + "\n")
            if d.exists():
                shutil.rmtree(d)
            tmp.rename(d)
            print(f"{name}: built in {time.time() - t0:.1f}s ({d})")
        if args.check:
            check(d, name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
