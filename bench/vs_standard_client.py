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
import json
import random
import shutil
import sys
import types
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import (
    BENCH_DIR,
    RESULTS,
    Goal,
    MetricsSampler,
    Result,
    sglang_available,
    sglang_server,
)
from fixed_client import Request, run_fixed
from vs_standard_runs import run_clients
from vs_standard_workload import KV_TOKENS, MODEL, STOP_IDS, write_inputs, write_job


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
            runs, overshoot = run_clients(
                url, job=job, work=work, sweep=sweep, tokenizer=tokenizer, res=res
            )
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
