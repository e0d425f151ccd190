"""tiny-kimi: a byte-level BPE tokenizer whose special tokens carry Kimi-K2's real ids, a
Kimi-K2-style chat template and a tiny LlamaForCausalLM whose EOS is `<|im_end|>` (163586)."""

from __future__ import annotations

from pathlib import Path

from .bpe import build_tokenizer_json, write_fast_tokenizer
from .recipes import KIMI_SPECIALS, KIMI_VOCAB
from .templates import KIMI_TEMPLATE
from .weights import build_model


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
