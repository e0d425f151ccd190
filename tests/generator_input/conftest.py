"""Fixtures for the input-side tests: offline tokenizers, job specs, dataset files."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from draftgen.generator.prompts.inputs import open_tokenizer
from draftgen.generator.prompts.samples import Reject, Sample
from draftgen.spec import parse_job
from draftgen.testing import families
from tests.generator.gen_helpers import KIMI_SPECIAL_TOKENS, samples_of, write_jsonl
from tests.jobs import job_document, kimi_like_model

from .family_cases import render_cases
from .tokenizer_fixture import DROPS_TOOLS, KIMI_LIKE, build_tokenizer


@pytest.fixture(scope="session")
def kimi_like_dir(tmp_path_factory) -> Path:
    return build_tokenizer(tmp_path_factory.mktemp("tok") / "kimi-like", KIMI_LIKE)


@pytest.fixture(scope="session")
def drops_tools_dir(tmp_path_factory) -> Path:
    return build_tokenizer(tmp_path_factory.mktemp("tok") / "drops-tools", DROPS_TOOLS)


def make_job(tokenizer: Path | str, datasets: list[dict[str, Any]], **model: Any):
    spec_model = kimi_like_model(tokenizer, **{"specialTokens": KIMI_SPECIAL_TOKENS, **model})
    return parse_job(job_document("t", model=spec_model, datasets=datasets))


@pytest.fixture
def run_dataset(tmp_path, kimi_like_dir) -> Callable[..., list[Sample | Reject]]:
    """Write rows to a JSONL file, run iter_samples over them in-process, return every item."""

    def run(
        rows: list[Any],
        fmt: str,
        *,
        tokenizer: Path | None = None,
        skip_ids=(),
        max_prompt_tokens: int | None = None,
        workers: int = 0,
        **dataset: Any,
    ):
        write_jsonl(tmp_path / "data.jsonl", rows)
        ds = {"name": "ds", "source": "data.jsonl", "format": fmt, **dataset}
        job = make_job(tokenizer or kimi_like_dir, [ds])
        with open_tokenizer(job, tmp_path, workers=workers) as ctx:
            return samples_of(
                job, ctx, tmp_path, skip_ids=skip_ids, max_prompt_tokens=max_prompt_tokens
            )

    return run


@pytest.fixture(scope="session")
def shared_tokenizer():
    """`open_tokenizer(job, base_dir, workers=0)`, opened once per tokenizer location for the
    session (loading a remote-code tokenizer takes seconds): for tests whose jobs differ only in
    their datasets, which `iter_samples` takes separately."""
    contexts: dict[tuple[str, bool], Any] = {}

    def get(job, base_dir: Path):
        model = job.spec.model
        key = (str(model.tokenizer_location), model.trust_remote_code)
        if key not in contexts:
            contexts[key] = open_tokenizer(job, base_dir, workers=0)
        return contexts[key]

    yield get
    for ctx in contexts.values():
        ctx.close()


@pytest.fixture(scope="session")
def family_tokenizer_dir(tmp_path_factory) -> Callable[[str], Path]:
    """A family's fixture tokenizer directory (draftgen.testing.families), built once."""
    built: dict[str, Path] = {}

    def get(family: str) -> Path:
        if family not in built:
            built[family] = families.build(family, tmp_path_factory.mktemp("families") / family)
        return built[family]

    return get


@pytest.fixture(scope="session")
def family_rendered(family_tokenizer_dir, tmp_path_factory) -> dict:
    """Every family case's job, tokenizer, rows and samples (family_cases.render_cases)."""
    return render_cases(family_tokenizer_dir, tmp_path_factory.mktemp)
