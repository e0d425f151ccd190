"""Jobs and datasets for runs inside the container, written below the container's input mount,
and the check that a run's records are what the tokenizer and the server say they must be."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from tests.generator.gen_helpers import (
    KIMI_SPECIAL_TOKENS,
    THINK,
    WEATHER_TOOL,
    direct_generate,
    template_ids,
    write_jsonl,
)
from tests.jobs import job_document, write_job_yaml

MAX_NEW_TOKENS = 12
ROWS = [
    {
        "id": "w1",
        "tools": [WEATHER_TOOL],
        "messages": [{"role": "user", "content": "What is the weather in Lagos?"}],
    },
    {
        "id": "p1",
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Tell me about tea."},
        ],
    },
]


def copy_tokenizer(model: Path, dest: Path) -> Path:
    """A model directory's tokenizer (and code) without its weights: what the generator reads."""
    dest.mkdir(parents=True, exist_ok=True)
    for f in model.iterdir():
        if f.is_file() and f.suffix != ".safetensors":
            shutil.copy2(f, dest / f.name)
    return dest


def write_job(
    host_dir: Path, container_dir: str, tokenizer: str, *, model_extra: dict[str, Any] | None = None
) -> Path:
    """job.yaml + rows.jsonl in `host_dir` (seen as `container_dir`); the tokenizer path is as
    the container sees it."""
    write_jsonl(host_dir / "rows.jsonl", ROWS)
    model = {
        "weights": tokenizer,
        "chatTemplateKwargs": {"thinking": True},
        "specialTokens": KIMI_SPECIAL_TOKENS,
        "generationPrefix": "<think>",
        **(model_extra or {}),
    }
    return write_job_yaml(
        host_dir / "job.yaml",
        job_document(
            "image-test",
            model=model,
            server={"tensorParallelSize": 1},
            sampling={"temperature": 0.0, "maxNewTokens": MAX_NEW_TOKENS},
            generator={"tokenizerWorkers": 1, "retries": 2},
            datasets=[
                {"name": "chat", "source": f"{container_dir}/rows.jsonl", "format": "messages"}
            ],
        ),
    )


def verify(recs: list[dict], tokenizer: Any, server_url: str) -> None:
    """input_ids = the tokenizer's own template ids; output_ids = a direct /generate."""
    assert sorted(r["source_index"] for r in recs) == list(range(len(ROWS)))
    for rec in recs:
        row = ROWS[rec["source_index"]]
        assert rec["id"] == f"chat/{row['id']}/0"
        assert rec["input_ids"] == template_ids(tokenizer, row["messages"], row.get("tools"))
        assert rec["input_ids"][-1] == THINK
        direct = direct_generate(server_url, rec["input_ids"], MAX_NEW_TOKENS)
        assert rec["output_ids"] == direct["output_ids"]
        assert rec["completion_tokens"] == len(rec["output_ids"]) > 0
