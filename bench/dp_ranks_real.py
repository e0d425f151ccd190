"""Per-rank admission on a real server with two KV-bound data-parallel ranks (issue 28): draftgen
pinning each request to the rank with room (`routed_dp_rank`) against SGLang's own dispatch
(`--load-balance-method` round_robin, total_requests, total_tokens), side by side in one run.

A real SGLang CPU server (tiny-kimi) with `--dp-size 2` (two schedulers, a KV pool of `--pool`
tokens each: the client-facing structure of data-parallel attention on GPUs), one start per
dispatch method. The work: pretokenized prompts alternating long and short (distinct, so the
prefix cache shares nothing), greedy, the same for every client, so every client asks for the
same work and gets the same tokens back. The SGLang-dispatched clients keep `--concurrency`
requests in flight in the same order (`bench/fixed_client.py`, no rank given); draftgen runs its
own admission (auto). The server's prefix cache is flushed between clients.

Per client, from the server's `dp_rank`-labelled `/metrics` sampled every 0.5 s over the steady
middle of its run (from 10 % to 70 % of its duration): KV usage and queue per rank, the tokens
the ranks prefilled beyond the prompts (a retracted request is prefilled again), and completion
tok/s, all from the first request sent to the last answered (a client's start-up left out).

    .cache/venv/bin/python bench/dp_ranks_real.py [--pairs N] [--pool T] [--concurrency C]
    .cache/venv/bin/python bench/dp_ranks_real.py --url URL   # a --dp-size 2 server already up
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import (
    BENCH_DIR,
    REPO,
    TINY_KIMI,
    TINY_KIMI_MODEL,
    Goal,
    Result,
    job_document,
    sglang_available,
    sglang_server,
)
from fixed_client import Request, run_fixed
from saturation_real_work import flush_cache

THINK = 163_606
METHODS = ("round_robin", "total_requests", "total_tokens")
STEADY = (0.10, 0.70)


def prompts(pairs: int, long: int, short: int) -> list[list[int]]:
    """Long, short, long, short...: distinct prompts ending in the thinking token."""
    out = []
    for k in range(pairs):
        out.append([1000 + (31 * k + 7 * i) % 90_000 for i in range(long - 1)] + [THINK])
        out.append([100_000 + 17 * k + i for i in range(short - 1)] + [THINK])
    return out


def rank_metrics(text: str) -> dict[int, dict[str, float]]:
    """`sglang:` series by `dp_rank`: counters (`_total`) summed over their other labels,
    gauges the largest."""
    out: dict[int, dict[str, float]] = {}
    for line in text.splitlines():
        m = re.match(r"sglang:(\w+)\{(.*)\} (\S+)$", line)
        rank = re.search(r'dp_rank="(\d+)"', m.group(2)) if m else None
        if m is None or rank is None:
            continue
        values = out.setdefault(int(rank.group(1)), {})
        name, value = m.group(1), float(m.group(3))
        if name.endswith("_total"):
            values[name] = values.get(name, 0.0) + value
        else:
            values[name] = max(values.get(name, value), value)
    return out


class RankSampler:
    """Every rank's gauges every `interval` s, in a thread."""

    def __init__(self, url: str, interval: float = 0.5) -> None:
        self.url, self.interval = url, interval
        self.samples: list[tuple[float, dict[int, dict[str, float]]]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def read(self) -> dict[int, dict[str, float]]:
        import httpx

        return rank_metrics(httpx.get(f"{self.url}/metrics", timeout=10).text)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.samples.append((time.time(), self.read()))
            except Exception:
                pass
            self._stop.wait(self.interval)

    def __enter__(self) -> RankSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join(5)

    def mean(self, rank: int, name: str, start: float, end: float) -> float:
        w = [v.get(rank, {}).get(name, 0.0) for t, v in self.samples if start <= t <= end]
        return sum(w) / len(w) if w else float("nan")


def prefilled(values: dict[int, dict[str, float]]) -> float:
    return sum(v.get("prefill_effective_tokens_total", 0.0) for v in values.values())


def write_job(work: Path, rows: list[list[int]], max_new: int) -> Path:
    (work / "data").mkdir(parents=True, exist_ok=True)
    with open(work / "data" / "mixed.jsonl", "w") as f:
        for i, ids in enumerate(rows):
            f.write(json.dumps({"id": f"m{i}", "input_ids": ids}) + "\n")
    job = job_document(
        "dp-ranks-real",
        model=TINY_KIMI_MODEL,
        sampling={"temperature": 0.0, "maxNewTokens": max_new},
        generator={"tokenizerWorkers": 1},
        datasets=[{"name": "mixed", "source": "data/mixed.jsonl", "format": "pretokenized"}],
    )
    path = work / "job.yaml"
    path.write_text(json.dumps(job))
    return path


def generate(url: str, job: Path, out: Path) -> str:
    """`draftgen generate` of this checkout (`python -m draftgen.cli`, as the tests run it: the
    venv's `draftgen` script may be another checkout's); its command line."""
    args = ["generate", "--job", str(job), "--server", url, "--output", str(out)]
    proc = subprocess.run(
        [sys.executable, "-m", "draftgen.cli", *args, "--progress", "log"],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    if proc.returncode != 0:
        raise SystemExit(f"draftgen generate failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return "draftgen " + " ".join(args).replace(str(REPO) + "/", "")


def span_of_records(out: Path) -> tuple[int, float, float]:
    """Completion tokens of the run's records, the first one's sending and the last one's answer
    (the generator's own start-up, tokenizer and server checks left out, as a client's are)."""
    recs = [
        json.loads(line)
        for shard in sorted((out / "mixed").glob("shard-*.jsonl"))
        for line in open(shard)
    ]
    return (
        sum(r["completion_tokens"] for r in recs),
        min(r["meta"]["created_at"] - r["meta"]["e2e_latency"] for r in recs),
        max(r["meta"]["created_at"] for r in recs),
    )


@contextmanager
def server_for(method: str, pool: int, url: str | None) -> Iterator[str]:
    """The URL of a `--dp-size 2` server dispatching by `method`: `url` as given, else one
    started here and stopped on exit."""
    if url:
        yield url.rstrip("/")
        return
    with sglang_server(
        TINY_KIMI,
        max_total_tokens=pool,
        dp_size=2,
        extra_args=("--load-balance-method", method),
        startup_timeout=900,
    ) as server:
        yield server.url


def measure(
    client: str,
    dispatch: str,
    url: str,
    run: Any,
    prompt_tokens: int,
) -> list[Any]:
    """Run `run()` (returns completion tokens and the span of its requests: first sent, last
    answered) while sampling the ranks; one row."""
    flush_cache(url)
    with RankSampler(url) as sampler:
        before = sampler.read()
        tokens, start, end = run()
        after = sampler.read()
    a, b = start + STEADY[0] * (end - start), start + STEADY[1] * (end - start)
    usage = [sampler.mean(r, "token_usage", a, b) for r in (0, 1)]
    queue = [sampler.mean(r, "num_queue_reqs", a, b) for r in (0, 1)]
    again = prefilled(after) - prefilled(before) - prompt_tokens
    return [
        client,
        dispatch,
        tokens / (end - start),
        usage[0],
        usage[1],
        queue[0],
        queue[1],
        max(0.0, again),
        round(end - start, 1),
    ]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pairs", type=int, default=16, help="long + short request pairs")
    ap.add_argument("--pool", type=int, default=1536, help="KV tokens per rank")
    ap.add_argument("--long", type=int, default=500, help="prompt tokens of a long request")
    ap.add_argument("--short", type=int, default=20)
    ap.add_argument("--max-new", type=int, default=160)
    ap.add_argument("--concurrency", type=int, default=12, help="SGLang-dispatched clients")
    ap.add_argument(
        "--methods", default=None, help=f"SGLang dispatch methods (default: {','.join(METHODS)})"
    )
    ap.add_argument(
        "--url",
        help="a running tiny-kimi server with --dp-size 2 and SGLang's default dispatch "
        "(round_robin), used instead of starting one; --pool must be its pool per rank",
    )
    args = ap.parse_args()
    if args.url and args.methods not in (None, METHODS[0]):
        raise SystemExit(f"--url: the server's dispatch is {METHODS[0]}; drop --methods")
    args.methods = args.methods or (METHODS[0] if args.url else ",".join(METHODS))
    missing = None if args.url else sglang_available()
    if missing:
        raise SystemExit(missing)
    work = BENCH_DIR / "dp-ranks-real"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    rows_in = prompts(args.pairs, args.long, args.short)
    prompt_tokens = sum(len(p) for p in rows_in)
    job = write_job(work, rows_in, args.max_new)
    requests = [Request(ids, args.max_new) for ids in rows_in]
    result = Result(
        "dp_ranks_real",
        "Per-rank admission on a real --dp-size 2 server: draftgen vs SGLang's dispatch",
        [
            "client",
            "dispatch",
            "completion tok/s",
            "KV usage rank 0",
            "KV usage rank 1",
            "queue rank 0",
            "queue rank 1",
            "tokens prefilled again",
            "seconds",
        ],
    )
    command = ""
    try:
        for method in args.methods.split(","):
            with server_for(method, args.pool, args.url) as url:

                def fixed(url: str = url) -> tuple[int, float, float]:
                    done = asyncio.run(
                        run_fixed(
                            url,
                            [("mixed", requests)],
                            concurrency=args.concurrency,
                            temperature=0.0,
                            ignore_eos=False,
                        )
                    )
                    return done.completion_tokens, done.start, done.end

                result.rows.append(
                    measure("fixed client", f"SGLang {method}", url, fixed, prompt_tokens)
                )
                if method == METHODS[0]:

                    def draftgen(url: str = url) -> tuple[int, float, float]:
                        nonlocal command
                        out = work / "out"
                        shutil.rmtree(out, ignore_errors=True)
                        command = generate(url, job, out)
                        return span_of_records(out)

                    result.rows.insert(
                        0,
                        measure(
                            "draftgen generate", "draftgen per rank", url, draftgen, prompt_tokens
                        ),
                    )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    ours = next((r for r in result.rows if r[0] == "draftgen generate"), None)
    theirs = [r for r in result.rows if r[0] != "draftgen generate"]
    if ours and theirs:
        best = max(theirs, key=lambda r: r[2])
        ratio = ours[2] / best[2]
        result.goals.append(
            Goal(
                "draftgen's per-rank routing gives at least the completion tok/s of SGLang's "
                "best own dispatch",
                f"{ours[2]:.1f} vs {best[2]:.1f} tok/s ({best[1]}): ×{ratio:.2f}",
                ratio >= 1.0,
            )
        )
        spread = abs(ours[3] - ours[4])
        result.goals.append(
            Goal(
                "both ranks' pools used alike (KV usage within 0.15 of each other)",
                f"rank 0 {ours[3]:.2f}, rank 1 {ours[4]:.2f}",
                spread <= 0.15,
            )
        )
    result.notes.append(
        f"{args.pairs} long ({args.long}-token) and {args.pairs} short ({args.short}-token) "
        f"prompts alternating, maxNewTokens {args.max_new}, greedy; two ranks of {args.pool} "
        f"KV tokens; SGLang-dispatched clients keep {args.concurrency} requests in flight"
        + (f"; draftgen: `{command}`" if command else "")
    )
    result.save()


if __name__ == "__main__":
    main()
