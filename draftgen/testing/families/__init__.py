"""Tokenizer fixtures of more model families, each reproducing its chat template's documented
behaviour (templates written from the models' documentation, not copied): Qwen3, DeepSeek-V3.1,
R1 and R1-0528, gpt-oss (harmony, on a small tiktoken encoding) and Llama-3.1. Tokenizers only, no weights:
`build(family, directory)` writes a directory `AutoTokenizer.from_pretrained` loads, in about a
second, offline and byte for byte the same every time. docs/models.md has the table.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from . import deepseek, gpt_oss, llama3, qwen3

BUILDERS: dict[str, Callable[[Path], Path]] = {
    "qwen3": qwen3.build,
    "deepseek-v3.1": deepseek.build,
    "deepseek-v3.1-no-tools": deepseek.build_without_tools,
    "deepseek-r1": deepseek.build_r1,
    "deepseek-r1-0528": deepseek.build_r1_0528,
    "gpt-oss": gpt_oss.build,
    "llama-3.1": llama3.build,
}


def build(family: str, directory: Path) -> Path:
    """Write `family`'s fixture tokenizer to `directory` and return it."""
    return BUILDERS[family](directory)
