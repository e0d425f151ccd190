"""tiny-kimi-tiktoken: tiny-kimi's weights with a tokenizer loaded only through
`trust_remote_code` (tokenization_tinykimi.py, beside this file), which wraps a tiktoken BPE file
built here and computes the tool declaration as Kimi-K2.5's tokenizer does."""

from __future__ import annotations

import base64
import json
import shutil
from pathlib import Path

from .bpe import CORPUS, REMOTE_TOKENIZER, bytes_to_unicode, train_bpe
from .recipes import COMMON, KIMI_SPECIALS
from .templates import TIKTOKEN_KIMI_TEMPLATE
from .weights import build_model


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
    ranks = tiktoken_ranks(200, min(KIMI_SPECIALS))
    with open(out_dir / "tiktoken.model", "w", encoding="ascii") as f:
        f.writelines(f"{base64.b64encode(tok).decode()} {rank}\n" for tok, rank in ranks.items())
    shutil.copy2(REMOTE_TOKENIZER, out_dir)
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
