"""The runs of bench/vs_standard_client.py: `draftgen generate`, SGLang's bench_serving and the
fixed-concurrency client over the same prompts on the same server, each a row of the table
(client, concurrency, requests, prompt and completion tokens, start, end, boundary gap, seconds
with at most 2 requests in flight)."""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

from common import CACHE, REPO, SGLANG_PY, Result, draftgen_generate
from fixed_client import Request, run_fixed
from vs_standard_workload import (
    DATASETS,
    DRAFTGEN_SAMPLING,
    MODEL,
    read_records,
    write_bench_serving_dataset,
)


def _sent(rec: dict) -> float:
    return rec["meta"]["created_at"] - rec["meta"]["e2e_latency"]


def boundary_gap(first: list[tuple[float, float]], second: list[tuple[float, float]]) -> float:
    """Seconds between the last request of the first dataset going out and the first of the
    second (0 when they overlap): the server drains meanwhile. (sent, done) pairs."""
    if not first or not second:
        return float("nan")
    return max(0.0, min(s for s, _ in second) - max(s for s, _ in first))


def few_in_flight_seconds(pairs: list[tuple[float, float]], at_most: int = 2) -> float:
    """Seconds of a run, first request out to last answer, with at most `at_most` requests in
    flight: where the server cannot be kept busy (a dataset's end)."""
    events = sorted([(s, 1) for s, _ in pairs] + [(e, -1) for _, e in pairs])
    seconds, count = 0.0, 0
    for (t, step), (t_next, _) in itertools.pairwise(events):
        count += step
        if count <= at_most:
            seconds += t_next - t
    return seconds


def fixed_row(
    label: str, concurrency: int, datasets: list[tuple[str, list[Request]]], result
) -> tuple:
    """A fixed-client run's row of the table (as `run_draftgen`'s)."""
    pairs = {n: [(t.sent, t.done) for t in result.timings if t.dataset == n] for n, _ in datasets}
    names = [n for n, _ in datasets]
    return (
        label,
        concurrency,
        len(result.timings),
        sum(len(r.input_ids) for _, rs in datasets for r in rs),
        result.completion_tokens,
        result.start,
        result.end,
        boundary_gap(pairs[names[0]], pairs[names[1]]),
        few_in_flight_seconds([p for ps in pairs.values() for p in ps]),
    )


def flush_cache(url: str) -> None:
    """Empty the server's prefix cache, so no client gains from prompts an earlier one sent."""
    import httpx

    httpx.post(f"{url}/flush_cache", timeout=30).raise_for_status()


def run_draftgen(url: str, job: Path, out: Path) -> tuple[dict[str, list[dict]], tuple, float, str]:
    """One `draftgen generate` run: its records, its row of the table, its wall time and its
    command line."""
    flush_cache(url)
    t0 = time.time()
    command = draftgen_generate(url, job, out)
    wall = time.time() - t0
    recs = read_records(out)
    all_recs = [r for rs in recs.values() for r in rs]
    pairs = {n: [(_sent(r), r["meta"]["created_at"]) for r in rs] for n, rs in recs.items()}
    names = list(DATASETS)
    row = (
        "draftgen generate",
        "auto",
        len(all_recs),
        sum(r["prompt_tokens"] for r in all_recs),
        sum(r["completion_tokens"] for r in all_recs),
        min(_sent(r) for r in all_recs),
        max(r["meta"]["created_at"] for r in all_recs),
        boundary_gap(pairs[names[0]], pairs[names[1]]),
        few_in_flight_seconds([p for ps in pairs.values() for p in ps]),
    )
    return recs, row, wall, command


def run_bench_serving(url: str, dataset: Path, n: int, concurrency: int, out: Path) -> dict:
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "PYTHONSAFEPATH": "1",
        "SGLANG_USE_CPU_ENGINE": "1",
        "TOKENIZERS_PARALLELISM": "false",
        "HF_HOME": str(CACHE / "hf"),
    }
    for var in ("PYTHONPATH", "VIRTUAL_ENV"):
        env.pop(var, None)
    cmd = [
        str(SGLANG_PY),
        str(REPO / "bench" / "sglang_bench_serving.py"),
        "--backend",
        "sglang-native",
        "--base-url",
        url,
        "--dataset-name",
        "custom",
        "--dataset-path",
        str(dataset),
        "--num-prompts",
        str(n),
        "--model",
        str(MODEL),
        "--tokenizer",
        str(MODEL),
        "--max-concurrency",
        str(concurrency),
        "--temperature",
        "1.0",
        "--disable-stream",
        "--disable-tqdm",
        "--seed",
        "1",
        "--ready-check-timeout-sec",
        "0",
        "--output-file",
        str(out),
    ]
    flush_cache(url)
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd="/")
    end = time.time()
    if proc.returncode != 0:
        raise SystemExit(f"bench_serving failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    result = json.loads(out.read_text().splitlines()[-1])
    result["_end"] = end
    result["_command"] = " ".join(cmd).replace(str(REPO) + "/", "")
    return result


def run_clients(
    url: str, work: Path, job: Path, sweep: list[int], tokenizer: Any, res: Result
) -> tuple[list[tuple], dict[str, float]]:
    """Every client in turn (draftgen first and again last), the prefix cache flushed before each:
    their rows, and draftgen's budget overshoot per dataset (from its first run). Notes on the
    commands go to `res`."""
    runs: list[tuple] = []
    # 1. draftgen (run again after the others: see 4.)
    recs, row, wall, command = run_draftgen(url, job, work / "out")
    all_recs = [r for rs in recs.values() for r in rs]
    names = list(DATASETS)
    runs.append(row)
    res.notes.append(
        f"draftgen: `{command}` took {wall:.1f} s in all (start-up, tokenizer load and "
        "health check included); the table counts from its first request out to its last "
        "answer, as for the other clients."
    )
    manifest = json.loads((work / "out" / "manifest.json").read_text())
    overshoot = {n: d["overshoot_percent"] for n, d in manifest["datasets"].items()}

    # 2. bench_serving: the same prompts and completion lengths, at each concurrency of `sweep`.
    custom = work / "custom.jsonl"
    usable = write_bench_serving_dataset(custom, all_recs, tokenizer)
    best = None
    for c in sweep:
        bs = run_bench_serving(url, custom, len(usable), c, work / f"bs-{c}.jsonl")
        b_end = bs["_end"]
        b_start = b_end - bs["duration"]
        runs.append(
            (
                "sglang.bench_serving",
                c,
                bs["completed"],
                bs["total_input_tokens"],
                bs["total_output_tokens"],
                b_start,
                b_end,
                float("nan"),
                float("nan"),
            )
        )
        if best is None or bs["output_throughput"] > best[1]["output_throughput"]:
            best = (c, bs)
    assert best is not None
    res.notes.append(
        f"bench_serving command (per concurrency; the wrapper only stubs its "
        f"optional `datasets` import): `{best[1]['_command']}`".replace(
            f"--max-concurrency {best[0]}", "--max-concurrency C"
        )
    )

    # 3. the fixed-concurrency client, datasets one after the other, sample-count caps
    # (one per dataset, exactly the number of samples draftgen produced).
    per_ds = [
        (n, [Request(r["input_ids"], max(1, r["completion_tokens"])) for r in recs[n]])
        for n in names
    ]
    flush_cache(url)
    fixed = asyncio.run(run_fixed(url, per_ds, concurrency=best[0]))
    runs.append(fixed_row("fixed asyncio client", best[0], per_ds, fixed))

    # 3b. The same client sending draftgen's own requests (its sampling: stop ids, each
    # dataset's maxNewTokens, no ignore_eos) instead of replaying known lengths — what
    # the replays gain from telling the server each exact length.
    real = [(n, [Request(r["input_ids"], DATASETS[n][1]) for r in recs[n]]) for n in names]
    flush_cache(url)
    own = asyncio.run(
        run_fixed(url, real, concurrency=best[0], ignore_eos=False, sampling=DRAFTGEN_SAMPLING)
    )
    runs.append(fixed_row("fixed client, draftgen's sampling", best[0], real, own))

    # 4. draftgen again, last: the machine's load drifts over minutes, so its rate is
    # the mean of a run before the others and one after them.
    _, row, _, _ = run_draftgen(url, job, work / "out-again")
    runs.append(("draftgen generate (again)", *row[1:]))
    return runs, overshoot
