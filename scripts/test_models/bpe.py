"""The byte-level BPE the test models' tokenizers are made of: a tiny corpus, a deterministic
trainer, and the tokenizer.json / tokenizer_config.json of a fast tokenizer built from them."""

from __future__ import annotations

import ast
import itertools
import json
from pathlib import Path

from draftgen.testing.merges import merge_pair

from .recipes import COMMON

# The remote-code tokenizer shipped in tiny-kimi-tiktoken's directory. It must stand alone when
# transformers loads it (trust_remote_code), so the byte map is defined there and read from here.
REMOTE_TOKENIZER = Path(__file__).resolve().parent / "tokenization_tinykimi.py"

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


def bytes_to_unicode_source() -> str:
    """The source of `bytes_to_unicode` in the remote-code tokenizer (part of every recipe)."""
    text = REMOTE_TOKENIZER.read_text(encoding="utf-8")
    for node in ast.parse(text).body:
        if isinstance(node, ast.FunctionDef) and node.name == "bytes_to_unicode":
            return ast.get_source_segment(text, node) or ""
    raise SystemExit(f"{REMOTE_TOKENIZER}: no bytes_to_unicode")


def bytes_to_unicode() -> dict[int, str]:
    """GPT-2's reversible byte -> printable unicode map (same as tokenizers' ByteLevel), as the
    remote-code tokenizer defines it."""
    namespace: dict = {}
    exec(bytes_to_unicode_source(), namespace)
    return namespace["bytes_to_unicode"]()


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
        new_words: dict[tuple[str, ...], int] = {}
        for word, freq in words.items():
            merged = tuple(merge_pair(word, best))
            new_words[merged] = new_words.get(merged, 0) + freq
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
