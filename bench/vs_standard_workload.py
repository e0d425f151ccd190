"""The workload of bench/vs_standard_client.py: two datasets of the same prompts for every client
(short multi-turn conversations, longer single prompts), draftgen's job over them, its records read
back, and those records as a replay dataset for SGLang's bench_serving."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

from common import PLAIN_WORDS, TINY_KIMI, TINY_KIMI_MODEL, job_document

MODEL = TINY_KIMI
KV_TOKENS = 2048
# Sampling with 1 in 200 of the vocabulary as stop ids gives mixed completion lengths
# (roughly geometric) even though the model's weights are random.
STOP_IDS = list(range(1000, 160_000, 200))
DATASETS = {  # name: (format, maxNewTokens)
    "chat": ("messages", 96),
    "long": ("prompt", 256),
}
# What draftgen sends besides the prompt and maxNewTokens (generator/sglang/client.py).
DRAFTGEN_SAMPLING = {"stop_token_ids": STOP_IDS, "skip_special_tokens": False, "no_stop_trim": True}


def _text(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(PLAIN_WORDS) for _ in range(words)).capitalize() + "."


def write_inputs(work: Path, rows: int) -> None:
    rng = random.Random(7)
    data = work / "data"
    data.mkdir(parents=True)
    with open(data / "chat.jsonl", "w") as f:  # short, multi-turn
        for i in range(rows):
            msgs = []
            for _ in range(rng.choice((1, 1, 2))):
                msgs += [
                    {"role": "user", "content": _text(rng, rng.randint(3, 25))},
                    {"role": "assistant", "content": _text(rng, rng.randint(3, 12))},
                ]
            msgs[-1] = {"role": "user", "content": _text(rng, rng.randint(3, 25))}
            f.write(json.dumps({"id": f"c{i}", "messages": msgs}) + "\n")
    with open(data / "long.jsonl", "w") as f:  # longer single prompts
        for i in range(rows):
            f.write(json.dumps({"id": f"l{i}", "prompt": _text(rng, rng.randint(25, 70))}) + "\n")


def write_job(work: Path, tokens: int) -> Path:
    job = job_document(
        "vs-standard-client",
        model=TINY_KIMI_MODEL,
        # Not seeded (as a job without `sampling.seed`): draftgen's second run samples anew.
        sampling={"temperature": 1.0, "maxNewTokens": 96, "stopTokenIds": STOP_IDS},
        generator={"tokenizerWorkers": 1},
        datasets=[
            {
                "name": name,
                "source": f"data/{name}.jsonl",
                "format": fmt,
                "sampling": {"maxNewTokens": max_new},
                "budget": {"completionTokens": tokens},
            }
            for name, (fmt, max_new) in DATASETS.items()
        ],
    )
    path = work / "job.yaml"
    path.write_text(json.dumps(job))
    return path


def read_records(out: Path) -> dict[str, list[dict]]:
    records: dict[str, list[dict]] = {}
    for name in DATASETS:
        rows = []
        for shard in sorted((out / name).glob("shard-*.jsonl")):
            rows += [json.loads(line) for line in open(shard)]
        records[name] = rows
    return records


def write_bench_serving_dataset(path: Path, records: list[dict], tokenizer: Any) -> list[dict]:
    """draftgen's prompts as text (the server re-tokenizes them to the same ids) and its
    completion lengths as " a" × n (one token each), in bench_serving's custom format; returns
    the records it kept (bench_serving drops completions shorter than 2 tokens)."""
    usable = [r for r in records if r["completion_tokens"] >= 2]
    with open(path, "w") as f:
        for r in usable:
            text = tokenizer.decode(r["input_ids"], skip_special_tokens=False)
            f.write(
                json.dumps(
                    {
                        "conversations": [
                            {"content": text},
                            {"content": " a" * r["completion_tokens"]},
                        ]
                    }
                )
                + "\n"
            )
    return usable
