"""Per input format, a job over the Kimi-like tokenizer and its tokenizer context, opened once for
a test module (loading a tokenizer is the slow part): what the row-level fault tests run
`iter_samples` with."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from draftgen.generator.prompts.inputs import open_tokenizer
from draftgen.spec import parse_job
from tests.jobs import job_document, kimi_like_model


@contextmanager
def input_contexts(
    name: str,
    tokenizer: Path,
    base: Path,
    formats: Iterable[str],
    datasets: Callable[[str], list[dict[str, Any]]],
) -> Iterator[dict[str, tuple[Any, Any]]]:
    """`fmt -> (job, tokenizer context)`: job `name` with `datasets(fmt)`, its files in `base`
    (each `<fmt>.jsonl` starts as a warm-up row); the contexts are closed on exit."""
    out = {}
    try:
        for fmt in formats:
            job = parse_job(
                job_document(
                    name,
                    model=kimi_like_model(tokenizer, specialTokens=["<think>", "</think>"]),
                    datasets=datasets(fmt),
                )
            )
            (base / f"{fmt}.jsonl").write_text('{"prompt": "warm-up"}\n')
            out[fmt] = (job, open_tokenizer(job, base, workers=0).__enter__())
        yield out
    finally:
        for _, ctx in out.values():
            ctx.close()
