"""tiny-chatml: a small byte-level BPE (256 bytes + merges) with ChatML specials, a Qwen3-style
template and a tiny Qwen2ForCausalLM whose EOS is `<|im_end|>`."""

from __future__ import annotations

from pathlib import Path

from .bpe import CORPUS, build_tokenizer_json, bytes_to_unicode, train_bpe, write_fast_tokenizer
from .recipes import CHATML_MERGES, CHATML_NAMES, RECIPES
from .templates import CHATML_TEMPLATE
from .weights import build_model


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
