"""A small byte-level BPE tokenizer with a real model's special tokens at the real model's ids.

Every family fixture is built from this: the 256 bytes (plus, optionally, a few merges learnt
from a tiny corpus) at the lowest ids the model's special tokens leave free, the special tokens
at their real ids, and `<|reserved_N|>` filler entries in between (never produced by encoding:
no merge leads to them), so the vocabulary has the real model's size and ids above 65,535 or
199,000 are exercised without the real model's files. Built offline, in about a second, the same
bytes every time.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from itertools import count, pairwise
from pathlib import Path
from typing import Any

from ..merges import merge_pair


@dataclass(frozen=True)
class TokenizerRecipe:
    """What a family's fixture tokenizer is made of."""

    specials: Mapping[str, int]
    """Special tokens at their real ids."""
    vocab_size: int
    """The real model's vocabulary size (every id below it exists)."""
    template: str
    """The chat template (written from the model's documentation)."""
    eos: str
    bos: str | None = None
    add_bos: bool = False
    """Encoding adds `bos` by itself (as Llama-3's and DeepSeek-V3's tokenizers do)."""
    plain_added: Collection[str] = ()
    """Specials that are added tokens but not `special` (Qwen3's `<think>`, `<tool_call>`, ...):
    still one id each, and kept by `decode(skip_special_tokens=True)`."""
    pattern: str | None = None
    """Pre-tokenization regex (tiktoken-style split); None: the whole text is one word."""
    ranks: Mapping[bytes, int] | None = None
    """Token bytes -> id (tiktoken's "mergeable ranks"); None: the 256 bytes only."""
    extra_config: dict[str, Any] = field(default_factory=dict)


def byte_to_char() -> dict[int, str]:
    """GPT-2's printable stand-in for every byte (what byte-level BPE vocabularies store)."""
    from transformers.convert_slow_tokenizer import bytes_to_unicode

    return bytes_to_unicode()


def train_merges(corpus: Iterable[str], num_merges: int) -> list[tuple[bytes, bytes]]:
    """Byte-pair merges learnt from `corpus` (each string one word), most frequent pair first;
    ties go to the larger pair, so the result never depends on dict order."""
    words = [[bytes([b]) for b in word.encode("utf-8")] for word in corpus]
    merges: list[tuple[bytes, bytes]] = []
    for _ in range(num_merges):
        pairs = Counter(p for w in words for p in pairwise(w))
        if not pairs:
            break
        best = max(pairs, key=lambda p: (pairs[p], p))
        merges.append(best)
        words = [merge_pair(w, best) for w in words]
    return merges


def byte_ranks(
    taken: Collection[int], corpus: Iterable[str] = (), num_merges: int = 0
) -> dict[bytes, int]:
    """The 256 bytes, then the learnt merges, at the lowest ids not in `taken`."""
    free = (i for i in count() if i not in taken)
    ranks = {bytes([b]): next(free) for b in range(256)}
    for a, b in train_merges(corpus, num_merges):
        ranks.setdefault(a + b, next(free))
    return ranks


def merges_of(ranks: Mapping[bytes, int]) -> list[tuple[bytes, bytes]]:
    """The BPE merges that reproduce tiktoken's algorithm over `ranks`: every split of a token
    into two tokens, ordered by the rank of the token they make (tiktoken merges the pair whose
    concatenation has the lowest rank first)."""
    merges = []
    for token, rank in ranks.items():
        for cut in range(1, len(token)):
            left, right = token[:cut], token[cut:]
            if left in ranks and right in ranks:
                merges.append((rank, ranks[left], ranks[right], left, right))
    return [(left, right) for *_, left, right in sorted(merges)]


def build_tokenizer(directory: Path, recipe: TokenizerRecipe) -> Path:
    """Write a tokenizer directory loadable by `AutoTokenizer.from_pretrained`."""
    from tokenizers import (
        AddedToken,
        Regex,
        Tokenizer,
        decoders,
        models,
        pre_tokenizers,
        processors,
    )
    from transformers import PreTrainedTokenizerFast

    ids = set(recipe.specials.values())
    ranks = dict(recipe.ranks) if recipe.ranks is not None else byte_ranks(ids)
    if ids & set(ranks.values()):
        raise ValueError("a special token's id is also a byte-level token's")
    chars = byte_to_char()

    def text(token: bytes) -> str:
        return "".join(chars[b] for b in token)

    vocab = {text(tok): i for tok, i in ranks.items()}
    vocab.update(recipe.specials)
    used = set(vocab.values())
    vocab.update({f"<|reserved_{i}|>": i for i in range(recipe.vocab_size) if i not in used})
    merges = [(text(a), text(b)) for a, b in merges_of(ranks)]
    tok = Tokenizer(
        models.BPE(vocab=vocab, merges=merges, ignore_merges=recipe.pattern is not None)
    )
    byte_level = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    tok.pre_tokenizer = (
        pre_tokenizers.Sequence(
            [pre_tokenizers.Split(Regex(recipe.pattern), behavior="isolated"), byte_level]
        )
        if recipe.pattern is not None
        else byte_level
    )
    tok.decoder = decoders.ByteLevel()
    tok.add_tokens(
        [
            AddedToken(t, special=t not in recipe.plain_added, normalized=False)
            for t in sorted(recipe.specials, key=recipe.specials.__getitem__)
        ]
    )
    names: dict[str, Any] = {"eos_token": recipe.eos}
    if recipe.bos is not None:
        names["bos_token"] = recipe.bos
        if recipe.add_bos:
            bos_id = recipe.specials[recipe.bos]
            tok.post_processor = processors.TemplateProcessing(
                single=f"{recipe.bos} $A",
                pair=f"{recipe.bos} $A $B",
                special_tokens=[(recipe.bos, bos_id)],
            )
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, **names, **recipe.extra_config)
    fast.chat_template = recipe.template
    directory.mkdir(parents=True, exist_ok=True)
    fast.save_pretrained(directory)
    return directory
