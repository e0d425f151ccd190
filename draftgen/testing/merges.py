"""The byte-pair merge step shared by both builders of test tokenizers: draftgen's family fixtures
(testing/families/vocab.py) and the tiny test models (scripts/test_models/bpe.py, run by the SGLang
environment's interpreter, which imports this file alone: keep it to the standard library)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

Symbol = TypeVar("Symbol", str, bytes)


def merge_pair(word: Sequence[Symbol], pair: tuple[Symbol, Symbol]) -> list[Symbol]:
    """`word` with each occurrence of `pair`, left to right and without overlap, joined into one
    symbol."""
    joined = pair[0] + pair[1]
    out: list[Symbol] = []
    i = 0
    while i < len(word):
        if i + 1 < len(word) and (word[i], word[i + 1]) == pair:
            out.append(joined)
            i += 2
        else:
            out.append(word[i])
            i += 1
    return out
