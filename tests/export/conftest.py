"""Fixtures for the export tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from draftgen.cli import main
from tests.generator.gen_helpers import generate_command
from tests.jobs import job_document, write_job_yaml

from .builders import synthetic_records, write_output
from .kimi_records import kimi_records

REPO = Path(__file__).resolve().parents[2]
TINY_KIMI = REPO / ".cache" / "models" / "tiny-kimi"


@pytest.fixture(scope="session")
def kimi():
    """The tiny-kimi tokenizer (`make models`)."""
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(TINY_KIMI))


@pytest.fixture(scope="session")
def kimi_run(kimi, tmp_path_factory):
    """An output directory of kimi_records(): a plain answer, a tool call, a truncated turn."""
    records = kimi_records(kimi)
    root = write_output(
        tmp_path_factory.mktemp("kimi") / "run", {"chat": records}, model=str(TINY_KIMI)
    )
    return root, records


@pytest.fixture
def output_dir(tmp_path: Path) -> Path:
    """Two datasets, one with truncated samples, in shards of four."""
    return write_output(
        tmp_path / "run",
        {
            "chat": synthetic_records("chat", 10, truncated_every=5),
            "code": synthetic_records("code", 7),
        },
        model="hf://moonshotai/Kimi-K2.5",
    )


@pytest.fixture(scope="session")
def generated(sglang_server, tmp_path_factory):
    """A small job run against the shared server: chat and glaive (tools) rows, short outputs;
    one run for every module that exports real records."""
    base = tmp_path_factory.mktemp("export-real")
    job_file = write_job_yaml(
        base / "job.yaml",
        job_document(
            "export-real",
            model={
                "weights": str(TINY_KIMI),
                "chatTemplateKwargs": {"thinking": True},
                "specialTokens": [
                    "<think>",
                    "</think>",
                    "<|im_end|>",
                    "<|tool_calls_section_begin|>",
                ],
                "generationPrefix": "<think>",
            },
            sampling={"temperature": 1.0, "maxNewTokens": 24, "seed": 11},
            datasets=[
                {
                    "name": "chat",
                    "source": str(REPO / "examples/data/chat.jsonl"),
                    "format": "messages",
                    "budget": {"maxSamples": 4},
                },
                {
                    "name": "tools",
                    "source": str(REPO / "examples/data/glaive.jsonl"),
                    "format": "glaive",
                    "budget": {"maxSamples": 3},
                },
            ],
        ),
    )
    out = base / "out"
    assert main(generate_command(job_file, out, sglang_server.url)) == 0
    return out
