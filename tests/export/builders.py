"""Output directories in the record format of docs/output-format.md, for the export tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

# Kimi-K2 ids the export must carry intact: <think>, </think>, the tool-call section opener.
THINK, END_THINK, TOOL_SECTION = 163606, 163607, 163595


def record(
    dataset: str,
    index: int,
    prompt: list[int],
    completion: list[int],
    finish: str = "stop",
    turn: int = 0,
) -> dict[str, Any]:
    return {
        "id": f"{dataset}/row{index:04d}/{turn}",
        "dataset": dataset,
        "source_index": index,
        "turn": turn,
        "input_ids": prompt,
        "output_ids": completion,
        "prompt_tokens": len(prompt),
        "completion_tokens": len(completion),
        "finish_reason": finish,
        "matched_stop": completion[-1] if finish == "stop" and completion else None,
        "meta": {
            "sampling": {"temperature": 1.0, "max_new_tokens": 64},
            "server": "http://127.0.0.1:30000",
            "attempts": 1,
        },
    }


def dataset_manifest(name: str, records: list[dict], budget: dict | None = None) -> dict:
    finish = {"stop": 0, "length": 0}
    for r in records:
        finish[r["finish_reason"]] += 1
    return {
        "dataset": name,
        "samples": len(records),
        "prompt_tokens": sum(len(r["input_ids"]) for r in records),
        "completion_tokens": sum(len(r["output_ids"]) for r in records),
        "finish_reasons": finish,
        "truncation_rate": finish["length"] / len(records) if records else 0.0,
        "rejects": 0,
        "budget": budget or {"completionTokens": 1000, "totalTokens": None, "maxSamples": None},
        "overshoot_completion_tokens": 0,
        "overshoot_percent": 0.0,
        "done": True,
        "exhausted": False,
        "updated_at": "2026-11-30T12:00:00Z",
    }


def write_output(
    root: Path, datasets: dict[str, list[dict]], model: str | None = None, shard_size: int = 4
) -> Path:
    """A `draftgen generate` output directory holding `datasets` (shards of `shard_size`)."""
    root.mkdir(parents=True, exist_ok=True)
    manifests = {}
    for name, records in datasets.items():
        ddir = root / name
        ddir.mkdir(exist_ok=True)
        for n in range(0, max(len(records), 1), shard_size):
            chunk = records[n : n + shard_size]
            (ddir / f"shard-{n // shard_size:05d}.jsonl").write_text(
                "".join(json.dumps(r) + "\n" for r in chunk)
            )
        (ddir / "rejects.jsonl").write_text("")
        manifests[name] = dataset_manifest(name, records)
        (ddir / "manifest.json").write_text(json.dumps(manifests[name]))
    job = {
        "job": "test-job",
        "model": model,
        "datasets": manifests,
        "completion_tokens": sum(m["completion_tokens"] for m in manifests.values()),
        "samples": sum(m["samples"] for m in manifests.values()),
        "throughput_tokens_per_second": 0.0,
        "eta_seconds": 0,
        "updated_at": "",
        "done": True,
    }
    (root / "manifest.json").write_text(json.dumps(job))
    return root


def synthetic_records(dataset: str, n: int, truncated_every: int = 0) -> list[dict]:
    """Records whose ids need no tokenizer: Kimi-range special ids around plain ones."""
    out = []
    for i in range(n):
        prompt = [163584 + (i % 3), 1000 + i, 2000 + i, 163601, THINK]
        completion = [300 + i, END_THINK, 400 + i] + [500] * (i % 7)
        finish = (
            "length" if truncated_every and i % truncated_every == truncated_every - 1 else "stop"
        )
        if finish == "stop":
            completion = completion + [TOOL_SECTION, 163586]
        out.append(record(dataset, i, prompt, completion, finish))
    return out
