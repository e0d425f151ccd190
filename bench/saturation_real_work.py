"""The work of the real-server saturation benchmark (`saturation_real.py`): its inputs (two
pre-tokenized datasets of short and long prompts, seeded), its job, reading the records back,
and the server-side steps between clients (flush the prefix cache, read retractions)."""

from __future__ import annotations

import json
import random
import time
from pathlib import Path

from common import TINY_KIMI_MODEL, job_document, read_sglang_metrics

DATASETS = {"short": (120, 200), "long": (1150, 1450)}  # prompt tokens: (least, most)


def write_inputs(work: Path, rows: int) -> None:
    rng = random.Random(17)
    (work / "data").mkdir(parents=True)
    for name, (lo, hi) in DATASETS.items():
        with open(work / "data" / f"{name}.jsonl", "w") as f:
            for i in range(rows):
                ids = [rng.randrange(1000, 100_000) for _ in range(rng.randint(lo, hi))]
                f.write(json.dumps({"id": f"{name[0]}{i}", "input_ids": ids}) + "\n")


def write_job(work: Path, max_new: int) -> Path:
    job = job_document(
        "saturation-real",
        model=TINY_KIMI_MODEL,
        # Seeded: each request carries a stable sampling_seed, which the fixed clients replay.
        sampling={"temperature": 1.0, "maxNewTokens": max_new, "seed": 17},
        generator={"tokenizerWorkers": 1},
        datasets=[
            {"name": name, "source": f"data/{name}.jsonl", "format": "pretokenized"}
            for name in DATASETS
        ],
    )
    path = work / "job.yaml"
    path.write_text(json.dumps(job))
    return path


def read_records(out: Path) -> list[dict]:
    rows = []
    for name in DATASETS:
        for shard in sorted((out / name).glob("shard-*.jsonl")):
            rows += [json.loads(line) for line in open(shard)]
    return rows


def sent_at(rec: dict) -> float:
    return rec["meta"]["created_at"] - rec["meta"]["e2e_latency"]


def flush_cache(url: str) -> None:
    import httpx

    for _ in range(60):  # 400 while requests still run (an aborted client's): wait
        if httpx.post(f"{url}/flush_cache", timeout=30).status_code == 200:
            return
        time.sleep(1.0)
    raise SystemExit("the server's prefix cache would not flush")


def retracted_total(url: str) -> float:
    return read_sglang_metrics(url).get("num_retracted_requests_total", 0.0)
