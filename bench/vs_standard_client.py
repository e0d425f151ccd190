"""Against the standard client (issue 7, benchmark 1): the same prompts, on the same real SGLang
CPU server (made KV-bound with a small `--max-total-tokens`), through

1. `draftgen generate` (two datasets at once, token budgets, automatic concurrency);
2. SGLang's own `python -m sglang.bench_serving` (native `/generate`), fed a custom dataset of
   exactly draftgen's prompts with exactly draftgen's completion lengths (`ignore_eos`), at
   several `--max-concurrency` values — its best is kept;
3. `bench/fixed_client.py`: a plain fixed-concurrency asyncio client, datasets one after the
   other, capped by sample count (the approach draftgen replaces), at bench_serving's best
   concurrency, again with draftgen's prompts and lengths; then once more sending draftgen's own
   sampling parameters (stop ids, each dataset's maxNewTokens) instead of replaying lengths —
   what a replay gains from telling the server each exact length;
4. `draftgen generate` again, last (its rate is the mean of its two runs: the load drifts).

The replays do exactly draftgen's work (same prompt and completion tokens), so completion tokens/s
compare directly; the machine is shared, so only ratios within one run mean anything. The server's
`/metrics` is sampled every 0.5 s to tell how much of each run it was saturated (a queue, or KV
usage above 90 %).

    .cache/venv/bin/python bench/vs_standard_client.py [--tokens 1000] [--sweep 4,8,16]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import os
import random
import shutil
import subprocess
import sys
import time
import types
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import (
    BENCH_DIR,
    CACHE,
    PLAIN_WORDS,
    REPO,
    RESULTS,
    SGLANG_PY,
    TINY_KIMI,
    TINY_KIMI_MODEL,
    Goal,
    MetricsSampler,
    Result,
    job_document,
    sglang_available,
    sglang_server,
)
from fixed_client import Request, run_fixed

MODEL = TINY_KIMI
KV_TOKENS = 2048
# Sampling with 1 in 200 of the vocabulary as stop ids gives mixed completion lengths
# (roughly geometric) even though the model's weights are random.
STOP_IDS = list(range(1000, 160_000, 200))
DATASETS = {  # name: (format, maxNewTokens)
    "chat": ("messages", 96),
    "long": ("prompt", 256),
}
# What draftgen sends besides the prompt and maxNewTokens (generator/client.py).
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


def _shortfall(runs: list[tuple], rates: list[float], ratio: float) -> str:
    """Why draftgen fell short, from the run's own figures (rows: draftgen ×2, bench_serving
    sweep, fixed replay, fixed with draftgen's sampling)."""
    replay, own = rates[-2], rates[-1]
    few = (runs[0][8] + runs[1][8]) / 2
    return (
        f"{1 - ratio:.0%} short of a replay. bench_serving and the fixed client replay "
        "draftgen's samples with `ignore_eos` and each exact length as `max_new_tokens`, "
        "and check no stop ids; draftgen cannot know the lengths and sends what generation "
        f"needs. The same fixed client sending draftgen's own sampling ran at {own:.0f} "
        f"tok/s against {replay:.0f} replaying ({own / replay - 1:+.0%}), so the request form "
        f"alone is worth about that much to the replays. draftgen had at most 2 requests in "
        f"flight for {few:.1f} s at the ends of its budgets (the replays know where they end)"
    )


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
    cmd = [
        str(REPO / ".cache/venv/bin/draftgen"),
        "generate",
        "--job",
        str(job),
        "--server",
        url,
        "--output",
        str(out),
        "--progress",
        "log",
    ]
    flush_cache(url)
    t0 = time.time()
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO)
    wall = time.time() - t0
    if proc.returncode != 0:
        raise SystemExit(f"draftgen generate failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
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
    return recs, row, wall, " ".join(cmd[1:]).replace(str(REPO) + "/", "")


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


def _steady(run: tuple) -> tuple[float, float]:
    """The middle 60 % of a run's time: not its ramp, not the end of its budgets."""
    start, end = run[5], run[6]
    return start + 0.2 * (end - start), end - 0.2 * (end - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--tokens",
        type=int,
        default=0,
        help="completion-token budget of each of the two datasets (default: "
        "sized from a quick probe of the server so a run takes --seconds)",
    )
    parser.add_argument(
        "--seconds",
        type=float,
        default=35.0,
        help="target duration of each run when --tokens is not given",
    )
    parser.add_argument("--sweep", default="3,6,12", help="bench_serving --max-concurrency values")
    parser.add_argument(
        "--url", default=None, help="use this running tiny-kimi server instead of starting one"
    )
    args = parser.parse_args()
    sweep = [int(x) for x in args.sweep.split(",")]
    res = Result(
        "vs_standard_client",
        "Against the standard client: same prompts, same server, same completion lengths",
        [
            "client",
            "concurrency",
            "requests",
            "prompt tok",
            "completion tok",
            "seconds",
            "completion tok/s",
            "draftgen ÷ this",
            "saturated %",
            "mean KV usage",
            "mean queue",
            "boundary gap s",
            "≤ 2 in flight s",
        ],
    )
    missing = None if args.url else sglang_available()
    if missing:
        res.goals.append(
            Goal("draftgen ≥ 1.0 × the best standard client", "not run", None, missing)
        )
        res.save()
        return
    work = BENCH_DIR / "vs-standard-client"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(MODEL))
    runs = []  # (client, concurrency, requests, prompt, completion, start, end, gap)
    try:
        with (
            (
                contextlib.nullcontext(types.SimpleNamespace(url=args.url.rstrip("/")))
                if args.url
                else sglang_server(MODEL, max_total_tokens=KV_TOKENS)
            ) as server,
            MetricsSampler(server.url) as sampler,
        ):
            url = server.url
            if not args.tokens:  # this machine's speed varies by 10x with its load: probe it
                rng = random.Random(3)
                probe = [
                    Request([rng.randrange(1000, 100_000) for _ in range(150)], 64)
                    for _ in range(8)
                ]
                p = asyncio.run(run_fixed(url, [("probe", probe)], concurrency=4))
                rate = p.completion_tokens / (p.end - p.start)
                args.tokens = int(min(4000, max(150, rate * args.seconds / 2)))
                res.notes.append(
                    f"A probe of 8 requests measured {rate:.0f} tok/s, so each "
                    f"dataset's budget was set to {args.tokens} completion tokens "
                    f"(runs of about {args.seconds:.0f} s)."
                )
            write_inputs(work, rows=max(50, args.tokens // 10))
            job = write_job(work, args.tokens)
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

            # 2. bench_serving: draftgen's prompts as text (the server re-tokenizes them to the
            # same ids) and its completion lengths as " a" × n (one token each).
            custom = work / "custom.jsonl"
            usable = [r for r in all_recs if r["completion_tokens"] >= 2]  # it drops shorter
            with open(custom, "w") as f:
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
                run_fixed(
                    url, real, concurrency=best[0], ignore_eos=False, sampling=DRAFTGEN_SAMPLING
                )
            )
            runs.append(fixed_row("fixed client, draftgen's sampling", best[0], real, own))

            # 4. draftgen again, last: the machine's load drifts over minutes, so its rate is
            # the mean of a run before the others and one after them.
            _, row, _, _ = run_draftgen(url, job, work / "out-again")
            runs.append(("draftgen generate (again)", *row[1:]))
            samples = sampler.samples
    finally:
        shutil.rmtree(work, ignore_errors=True)

    runs.insert(1, runs.pop())  # the two draftgen runs first
    rates = [(r[4] / (r[6] - r[5])) for r in runs]
    dg_rate = (rates[0] + rates[1]) / 2
    for r, rate in zip(runs, rates):
        share = sampler.saturated_share(r[5], r[6])
        res.rows.append(
            [
                r[0],
                r[1],
                r[2],
                r[3],
                r[4],
                round(r[6] - r[5], 1),
                rate,
                dg_rate / rate,
                round(100 * share, 1),
                round(sampler.mean("token_usage", *_steady(r)), 3),
                round(sampler.mean("num_queue_reqs", *_steady(r)), 1),
                r[7],
                round(r[8], 1),
            ]
        )
    best_other = max(rates[2:])
    ratio = dg_rate / best_other
    res.goals.append(
        Goal(
            "draftgen's completion tok/s ≥ 1.0 × the best of the others",
            f"{ratio:.2f}×",
            ratio >= 1.0,
            "" if ratio >= 1.0 else _shortfall(runs, rates, ratio),
        )
    )
    usage = [sampler.mean("token_usage", *_steady(r)) for r in runs[:2]]
    queue = [sampler.mean("num_queue_reqs", *_steady(r)) for r in runs[:2]]
    res.goals.append(
        Goal(
            "draftgen keeps the real server's KV pool full: mean KV usage ≥ 0.90, short queue",
            f"KV usage {usage[0]:.2f} and {usage[1]:.2f}, queue {queue[0]:.1f} and "
            f"{queue[1]:.1f} (its two runs, steady state)",
            min(usage) >= 0.9,
        )
    )
    res.notes.append(
        f"Server: tiny-kimi (random weights, Kimi-K2's tokenizer and template) on the CPU with "
        f"--max-total-tokens {KV_TOKENS}; two datasets (`chat`: short multi-turn conversations, "
        f"maxNewTokens 96; `long`: longer single prompts, maxNewTokens 256), each with a budget of "
        f"{args.tokens} completion tokens; temperature 1.0 with {len(STOP_IDS)} stop ids (1 in 200 of "
        "the vocabulary), which "
        "gives mixed completion lengths. bench_serving and the fixed client replay exactly "
        "draftgen's prompts and completion lengths (ignore_eos), so all do the same work "
        "(bench_serving drops completions shorter than 2 tokens). \"fixed client, draftgen's "
        "sampling\" sends the same prompts with draftgen's own sampling parameters instead (its "
        "completions are sampled anew): the request form without the replay's knowledge."
    )
    res.notes.append(
        f"draftgen ran first and again last (the same job; sampled anew, so its second run's "
        f"completions differ in detail but not in kind): {rates[0]:.0f} and "
        f'{rates[1]:.0f} tok/s; "draftgen ÷ this" and the goal use their mean, '
        f"{dg_rate:.0f} tok/s. The server's prefix cache is flushed before every run. At the "
        "end of each dataset draftgen admits requests only as the budget allows, a few at a "
        'time, while the other clients replay its exact samples (an oracle count); "≤ 2 in '
        "flight s\" measures that end (from each client's own request timings)."
    )
    res.notes.append(
        "saturated % = share of /metrics samples (every 0.5 s) in which the server had a queue or "
        "KV usage above 90 %. mean KV usage / mean queue: `sglang:token_usage` and "
        "`num_queue_reqs` averaged over the steady state, the middle 60 % of each run (not the "
        "ramp, not the end of the budgets). boundary gap = seconds between the last request of `chat` going out "
        "and the first of `long` (0 when they overlap; bench_serving mixes both in one file)."
    )
    res.notes.append(
        "draftgen's budget overshoot on this real server: "
        + ", ".join(f"{n} {v:.2f} %" for n, v in overshoot.items())
        + f" of {args.tokens} tokens."
    )
    res.add_table(
        "Real-server budget overshoot (draftgen, finish policy)",
        ["dataset", "budget", "overshoot %"],
        [[n, args.tokens, v] for n, v in overshoot.items()],
    )
    res.save()
    # The raw /metrics samples, for a closer look at saturation (not used by the report).
    (RESULTS / "vs_standard_client.samples.json").write_text(json.dumps(samples[:5000]))


if __name__ == "__main__":
    main()
