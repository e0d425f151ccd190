"""Jobs and datasets for runs inside the container, written below the container's input mount,
and the check that a run's records are what the tokenizer and the server say they must be."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import httpx
import yaml

KIMI_SPECIAL_TOKENS = [
    "<think>",
    "</think>",
    "<|im_end|>",
    "<|tool_calls_section_begin|>",
    "<|tool_call_begin|>",
    "<|tool_call_argument_begin|>",
    "<|tool_call_end|>",
]
THINK = 163606
MAX_NEW_TOKENS = 12
WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather for a city",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}
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
    host_dir.mkdir(parents=True, exist_ok=True)
    with open(host_dir / "rows.jsonl", "w", encoding="utf-8") as f:
        f.writelines(json.dumps(r) + "\n" for r in ROWS)
    model = {
        "weights": tokenizer,
        "chatTemplateKwargs": {"thinking": True},
        "specialTokens": KIMI_SPECIAL_TOKENS,
        "generationPrefix": "<think>",
        **(model_extra or {}),
    }
    job = {
        "apiVersion": "draftgen.io/v1alpha1",
        "kind": "GenerationJob",
        "metadata": {"name": "image-test"},
        "spec": {
            "model": model,
            "server": {"tensorParallelSize": 1},
            "sampling": {"temperature": 0.0, "maxNewTokens": MAX_NEW_TOKENS},
            "generator": {"tokenizerWorkers": 1, "retries": 2},
            "datasets": [
                {"name": "chat", "source": f"{container_dir}/rows.jsonl", "format": "messages"}
            ],
        },
    }
    path = host_dir / "job.yaml"
    path.write_text(yaml.safe_dump(job, sort_keys=False))
    return path


def records(directory: Path) -> list[dict]:
    out: list[dict] = []
    for shard in sorted(directory.glob("shard-*.jsonl")):
        out += [json.loads(line) for line in shard.read_text().splitlines()]
    return out


def verify(recs: list[dict], tokenizer: Any, server_url: str) -> None:
    """input_ids = the tokenizer's own template ids; output_ids = a direct /generate."""
    assert sorted(r["source_index"] for r in recs) == list(range(len(ROWS)))
    for rec in recs:
        row = ROWS[rec["source_index"]]
        assert rec["id"] == f"chat/{row['id']}/0"
        own = tokenizer.apply_chat_template(
            row["messages"],
            tools=row.get("tools"),
            add_generation_prompt=True,
            tokenize=True,
            return_dict=False,
            thinking=True,
        )
        assert rec["input_ids"] == list(own)
        assert rec["input_ids"][-1] == THINK
        direct = httpx.post(
            f"{server_url}/generate",
            timeout=120,
            json={
                "input_ids": rec["input_ids"],
                "sampling_params": {
                    "temperature": 0.0,
                    "max_new_tokens": MAX_NEW_TOKENS,
                    "skip_special_tokens": False,
                    "no_stop_trim": True,
                },
            },
        ).json()
        assert rec["output_ids"] == direct["output_ids"]
        assert rec["completion_tokens"] == len(rec["output_ids"]) > 0
