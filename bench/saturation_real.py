"""Saturation on a real KV-bound server (issue 17): does draftgen keep a real SGLang server's KV
pool full, with a short queue, better than a fixed concurrency?

ONE real SGLang CPU server (tiny-kimi, `--max-total-tokens 8192`) and the issue's work: prompts
of ~160 and ~1,300 tokens (two pretokenized datasets of the same size, fixed seed), up to 256 new
tokens each. The clients run one after another, the server's prefix cache flushed between them:

1. `draftgen generate` (auto concurrency), both datasets at once;
2. the fixed-concurrency client (`bench/fixed_client.py`) at 16, 32 and 64, sending exactly
   draftgen's requests — the same prompts, interleaved as draftgen's feed hands them out, with
   the same per-request sampling parameters (its `sampling_seed` included, read back from its
   records), so every client asks the server for the same work and gets about the same lengths;
3. `draftgen generate` again, last (the machine's load drifts).

Per client, from the server's `/metrics` sampled every 0.5 s and time-weighted over its steady
state: completion tok/s, `sglang:token_usage`, `num_running_reqs`, `num_queue_reqs`, the
server's `new_token_ratio` (what it reserves for each running request's remaining tokens), and
the retractions (`num_retracted_requests_total`, its change over the client's run).

    .cache/venv/bin/python bench/saturation_real.py [--rows N] [--seconds S]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import random
import shutil
import sys
import types
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import (
    BENCH_DIR,
    REPO,
    RESULTS,
    TINY_KIMI,
    Goal,
    MetricsSampler,
    Result,
    draftgen_generate,
    env_int,
    sglang_available,
    sglang_server,
)
from fixed_client import Request, RunResult, run_fixed
from saturation_real_work import (
    DATASETS,
    flush_cache,
    read_records,
    retracted_total,
    sent_at,
    write_inputs,
    write_job,
)

KV_TOKENS = 8192
MAX_NEW = 256
FIXED = (16, 32, 64)
# Steady state: from the answer of the first RAMP_SHARE of a client's requests (its ramp) to
# the answer of the first TAIL_SHARE (after that less work is left than the pool holds: the end
# of the budget drains it). The same requests for every client, so the same share of the work.
RAMP_SHARE = 0.15
TAIL_SHARE = 0.70
# SGLang lowers its reservation ratio from 0.7 to 0.098 over 600 decode steps and resets it
# whenever it idles (between clients). A GPU server takes 600 steps in well under a minute and
# then runs at the floor for hours; this CPU makes 2–3 steps a second, so the ratio would still
# be decaying when a client ends. The server here decays over DECAY_STEPS instead: the long
# run's steady state, in a one-minute client (the same for every client).
DECAY_STEPS = 40
# SGLang refreshes its /metrics gauges every `--decode-log-interval` decode steps (40): 1–2 s on
# a GPU, 15 s on this CPU. Every LOG_INTERVAL steps here: about as fresh as on a GPU.
LOG_INTERVAL = 4
USAGE_GOAL = 0.90
SHORT_QUEUE = 5.0  # "a few requests": a mean queue above this is not short
RETRACTION_STORM = 0.05  # retracted requests per request: above is a storm


def weighted_mean(samples: list[tuple[float, dict]], name: str, start: float, end: float) -> float:
    """Time-weighted mean of one gauge over [start, end]: each reading holds until the next."""
    total = weight = 0.0
    for (t, v), (t_next, _) in itertools.pairwise(samples):
        lo, hi = max(t, start), min(t_next, end)
        if hi > lo and name in v:
            total += v[name] * (hi - lo)
            weight += hi - lo
    return total / weight if weight else float("nan")


def steady_window(done: list[float], dataset: list[str]) -> tuple[float, float]:
    """[answer of the first RAMP_SHARE of requests, answer of the first TAIL_SHARE or the last
    answer of the dataset that finished first, whichever is earlier]: while the mix runs."""
    answered = sorted(done)
    first_done = min(max(d for d, n in zip(done, dataset) if n == name) for name in set(dataset))
    end = min(answered[int(TAIL_SHARE * len(answered))], first_done)
    return answered[int(RAMP_SHARE * len(answered))], end


def client_row(
    label: str,
    concurrency: str | int,
    sent: list[float],
    done: list[float],
    completion: list[int],
    dataset: list[str],
    retractions: float,
    samples: list[tuple[float, dict]],
) -> list:
    start, end = min(sent), max(done)
    s0, s1 = steady_window(done, dataset)
    steady_tokens = sum(n for d, n in zip(done, completion) if s0 <= d <= s1)

    def mean(name: str) -> float:
        return round(weighted_mean(samples, name, s0, s1), 3)

    return [
        label,
        concurrency,
        len(sent),
        sum(completion),
        round(end - start, 1),
        sum(completion) / (end - start),
        steady_tokens / (s1 - s0) if s1 > s0 else float("nan"),
        round(s1 - s0, 1),
        mean("token_usage"),
        mean("num_running_reqs"),
        mean("num_queue_reqs"),
        mean("new_token_ratio"),
        int(retractions),
        round(weighted_mean(samples, "token_usage", start, end), 3),
    ]


COLUMNS = [
    "client",
    "concurrency",
    "requests",
    "completion tok",
    "seconds",
    "completion tok/s",
    "steady tok/s",
    "steady s",
    "KV usage",
    "running",
    "queue",
    "new_token_ratio",
    "retractions",
    "whole-run KV usage",
]
USAGE, QUEUE, RETRACTIONS, RATE = (
    COLUMNS.index("KV usage"),
    COLUMNS.index("queue"),
    COLUMNS.index("retractions"),
    COLUMNS.index("completion tok/s"),
)


def probe_rows(url: str, seconds: float) -> tuple[int, float]:
    """Rows per dataset for runs of about `seconds`: this machine's speed varies with its load."""
    rng = random.Random(3)
    probe = [
        Request([rng.randrange(1000, 100_000) for _ in range(rng.choice((160, 1300)))], 64)
        for _ in range(12)
    ]
    p = asyncio.run(run_fixed(url, [("probe", probe)], concurrency=12, ignore_eos=False))
    rate = p.completion_tokens / (p.end - p.start)
    mean_len = p.completion_tokens / max(1, len(p.timings))
    return int(min(90, max(24, rate * seconds / mean_len / 2))), rate


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--rows",
        type=int,
        default=env_int("BENCH_SATURATION_REAL_ROWS", 36),
        help="prompts per dataset (0: sized from a probe so each client runs --seconds)",
    )
    parser.add_argument("--seconds", type=float, default=50.0)
    parser.add_argument("--max-new", type=int, default=MAX_NEW, help="maxNewTokens")
    parser.add_argument(
        "--kv-tokens",
        type=int,
        default=env_int("BENCH_SATURATION_REAL_KV_TOKENS", KV_TOKENS),
        help="the server's --max-total-tokens (its KV pool)",
    )
    parser.add_argument(
        "--url",
        default=None,
        help="use this running tiny-kimi server (started with --max-total-tokens as --kv-tokens, "
        f"--decode-log-interval {LOG_INTERVAL} and SGLANG_NEW_TOKEN_RATIO_DECAY_STEPS={DECAY_STEPS} "
        "for comparable figures)",
    )
    parser.add_argument(
        "--draftgen",
        default=str(REPO / ".cache/venv/bin/draftgen"),
        help="the draftgen executable (e.g. another checkout's, to compare admission rules)",
    )
    args = parser.parse_args()
    wide = args.kv_tokens != KV_TOKENS
    if wide and args.rows == env_int("BENCH_SATURATION_REAL_ROWS", 36):
        args.rows = args.rows * args.kv_tokens // KV_TOKENS  # as many pools' worth of work
    res = Result(
        f"saturation_real_{args.kv_tokens // 1024}k" if wide else "saturation_real",
        "Saturation on a real KV-bound server: draftgen auto vs fixed concurrency (real CPU "
        f"SGLang server, KV pool {args.kv_tokens:,} tokens)",
        COLUMNS,
    )
    missing = None if args.url else sglang_available()
    if missing:
        res.goals.append(
            Goal(f"real CPU server: KV usage ≥ {USAGE_GOAL}", "not run", None, missing)
        )
        res.save()
        return
    work = BENCH_DIR / "saturation-real"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    runs: list[list] = []
    try:
        with (
            (
                contextlib.nullcontext(types.SimpleNamespace(url=args.url.rstrip("/")))
                if args.url
                else sglang_server(
                    TINY_KIMI,
                    max_total_tokens=args.kv_tokens,
                    extra_args=["--decode-log-interval", str(LOG_INTERVAL)],
                    env={"SGLANG_NEW_TOKEN_RATIO_DECAY_STEPS": str(DECAY_STEPS)},
                )
            ) as server,
            MetricsSampler(server.url) as sampler,
        ):
            url = server.url
            if not args.rows:
                args.rows, rate = probe_rows(url, args.seconds)
                res.notes.append(
                    f"A probe of 12 requests measured {rate:.0f} tok/s, so each dataset had "
                    f"{args.rows} prompts (runs of about {args.seconds:.0f} s per client)."
                )
            write_inputs(work, args.rows)
            job = write_job(work, args.max_new)

            def draftgen(label: str, out: Path) -> list[dict]:
                flush_cache(url)
                r0 = retracted_total(url)
                command = draftgen_generate(url, job, out, args.draftgen)
                recs = read_records(out)
                runs.append(
                    client_row(
                        label,
                        "auto",
                        [sent_at(r) for r in recs],
                        [r["meta"]["created_at"] for r in recs],
                        [r["completion_tokens"] for r in recs],
                        [r["dataset"] for r in recs],
                        retracted_total(url) - r0,
                        sampler.samples,
                    )
                )
                if not res.notes or "draftgen:" not in res.notes[-1]:
                    res.notes.append(f"draftgen: `{command}`.")
                return recs

            recs = draftgen("draftgen generate", work / "out")
            # Draftgen's requests in the order its feed handed them out (the datasets
            # interleaved), each with its exact sampling parameters.
            replay = [
                Request(r["input_ids"], args.max_new, r["meta"]["sampling"], r["dataset"])
                for r in sorted(recs, key=sent_at)
            ]
            for c in FIXED:
                flush_cache(url)
                r0 = retracted_total(url)
                fixed: RunResult = asyncio.run(
                    run_fixed(url, [("mix", replay)], concurrency=c, ignore_eos=False)
                )
                t = fixed.timings
                runs.append(
                    client_row(
                        "fixed client",
                        c,
                        [x.sent for x in t],
                        [x.done for x in t],
                        [x.completion_tokens for x in t],
                        [x.dataset for x in t],
                        retracted_total(url) - r0,
                        sampler.samples,
                    )
                )
            draftgen("draftgen generate (again)", work / "out-again")
            samples = sampler.samples
    finally:
        shutil.rmtree(work, ignore_errors=True)

    runs.insert(1, runs.pop())  # both draftgen runs first
    res.rows = runs
    dg, fixed_rows = runs[:2], runs[2:]
    dg_rate = sum(r[RATE] for r in dg) / 2
    best = max(fixed_rows, key=lambda r: r[RATE])
    for r in runs:
        r.insert(RATE + 1, round(dg_rate / r[RATE], 2))
    res.columns = [*COLUMNS[: RATE + 1], "draftgen ÷ this", *COLUMNS[RATE + 1 :]]
    off = 1  # the inserted column
    met = all(
        r[USAGE + off] >= USAGE_GOAL
        and r[QUEUE + off] <= SHORT_QUEUE
        and r[RETRACTIONS + off] <= RETRACTION_STORM * r[2]
        for r in dg
    )
    res.goals.append(
        Goal(
            f"real CPU server: steady-state KV usage ≥ {USAGE_GOAL:.2f} with a short queue",
            "; ".join(
                f"usage {r[USAGE + off]:.2f}, queue {r[QUEUE + off]:.1f}, "
                f"{r[RETRACTIONS + off]} retractions"
                for r in dg
            )
            + " (draftgen's two runs)",
            met,
            ""
            if met
            else (
                "best fixed client: usage "
                + f"{max(r[USAGE + off] for r in fixed_rows):.2f}; the server admits a request "
                "only while prompt + maxNewTokens fits beside new_token_ratio × the remaining "
                "tokens of every running one (its mean ratio is in the table)"
            ),
        )
    )
    ratio = dg_rate / best[RATE]
    res.goals.append(
        Goal(
            "real CPU server: draftgen ÷ best fixed (completion tok/s)",
            f"{ratio:.2f}× (fixed {best[1]} best)",
            None,
            "reported, not a goal on a CPU: one decode step costs about the same at any batch "
            "size here, so a fuller pool does not show as throughput as it would on a GPU",
        )
    )
    res.notes.append(
        f"Server: tiny-kimi on the CPU, --max-total-tokens {args.kv_tokens:,}; prompts of "
        f"{DATASETS['short'][0]}–{DATASETS['short'][1]} and {DATASETS['long'][0]}–"
        f"{DATASETS['long'][1]} tokens ({args.rows} of each, seed 17), maxNewTokens {args.max_new}, "
        "temperature 1.0 with draftgen's per-sample seed (the random weights end generations "
        "early at random: mixed lengths). Every client sends the same requests (the fixed ones "
        "replay draftgen's, in its order, with its sampling parameters); the prefix cache is "
        "flushed between clients."
    )
    need = DATASETS["long"][1] + args.max_new + 1
    res.notes.append(
        f"A long prompt starts only when its prompt + maxNewTokens + 1 fits the free pool (SGLang "
        f"charges a new request its whole maxNewTokens): up to {need:,} tokens, "
        f"{need / args.kv_tokens:.0%} of this pool, so before each one the pool must drain to "
        f"{1 - need / args.kv_tokens:.2f} full whatever the client does (the seed's 4,000-token "
        "coding prompts with maxNewTokens 4,096 or more: 8,097 of its 159,277, 5 %)."
    )
    res.notes.append(
        "SGLang reserves new_token_ratio × the remaining maxNewTokens of every running request "
        "before it admits another; the ratio falls from 0.7 to 0.098 over 600 decode steps and "
        "is reset whenever the server idles (so before every client). A GPU makes 600 steps in "
        "well under a minute and then runs at the floor for hours; this CPU makes 2–3 steps a "
        "second, so the ratio would still be decaying when a one-minute client ends and would "
        "cap every client's KV usage near 0.75 (measured: 0.60 mean ratio, usage 0.62–0.75 for "
        "all clients). The server here runs with SGLANG_NEW_TOKEN_RATIO_DECAY_STEPS="
        f"{DECAY_STEPS} (the same for every client): a long run's steady state in a one-minute "
        "client; its mean ratio over each steady state is in the table. Likewise SGLang "
        "refreshes its /metrics gauges every --decode-log-interval decode steps (40: 1–2 s on "
        f"a GPU, about 15 s here); the server runs with --decode-log-interval {LOG_INTERVAL}, "
        "which is what draftgen's admission and this benchmark's sampler read."
    )
    res.notes.append(
        f"Steady state: from the answer of the first {RAMP_SHARE:.0%} of a client's requests "
        f"(its ramp) to the answer of the first {TAIL_SHARE:.0%} or the last answer of the "
        "dataset that finished first, whichever is earlier (then less work is left than the "
        "pool holds, or one dataset runs alone: the end of the budgets; every client does the "
        "same requests; whole-run KV usage is the same gauge from first request out to last "
        "answer, tails included). KV "
        "usage, running, queue and new_token_ratio are time-weighted over that window; steady "
        "tok/s counts the completion tokens answered in it; completion tok/s is the whole run "
        f"(first request out to last answer). Short queue: mean ≤ {SHORT_QUEUE:.0f}; a "
        f"retraction storm: more than {RETRACTION_STORM:.0%} of requests retracted."
    )
    res.notes.append(
        f"draftgen ÷ this: the mean of draftgen's two runs' whole-run tok/s, {dg_rate:.0f}, over "
        "this client's."
    )
    res.save()
    (RESULTS / "saturation_real.samples.json").write_text(json.dumps(samples[:5000]))


if __name__ == "__main__":
    main()
