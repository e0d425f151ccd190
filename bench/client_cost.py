"""Client cost (issue 7, benchmark 3): requests/s and completion tokens/s one `draftgen generate`
process sustains on one core against an instantly answering server, and its CPU seconds per
million generated tokens.

The server is `bench/canned_server.py` (a harness: canned `/generate` answers of realistic size,
on the other core). The generator runs in this process, pinned to core 0, on a `pretokenized`
dataset (pre-tokenization has its own benchmark), with every request, record write, ledger and
metric update of a real run. Two runs of different sizes are measured and subtracted, so the
start-up (imports, tokenizer load, health check) is not counted per token.

    .cache/venv/bin/python bench/client_cost.py [--requests 3000] [--output-tokens 1000]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import BENCH_DIR, PY, REPO, TINY_KIMI, Goal, Result, job_document

from draftgen.testing.sglang import free_port

# The field's rates (field-facts.md): an 8-GPU server gives about 1,000-2,000 tokens/s.
SERVERS = 10
SERVER_TOKENS_PER_SECOND = 2000


def _write_job(workdir: Path, requests: int, prompt_tokens: int, in_flight: int) -> Path:
    rng = random.Random(1)
    data = workdir / "prompts.jsonl"
    with open(data, "w") as f:
        for i in range(requests):
            ids = [rng.randrange(1000, 160_000) for _ in range(prompt_tokens)]
            f.write(json.dumps({"id": f"p{i}", "input_ids": ids}) + "\n")
    job = job_document(
        "client-cost",
        model={"weights": str(TINY_KIMI)},
        sampling={"temperature": 1.0, "maxNewTokens": 4096},
        generator={
            "concurrency": {"mode": "fixed", "maxRequests": in_flight},
            "tokenizerWorkers": 1,
        },
        datasets=[{"name": "pre", "source": str(data), "format": "pretokenized"}],
    )
    path = workdir / "job.yaml"
    path.write_text(json.dumps(job))
    return path


def _run_generator(job: Path, url: str, output: Path) -> tuple[float, float, int]:
    """(wall seconds, CPU seconds of this process, records) of one `draftgen generate` run."""
    import argparse as ap

    from draftgen.generator import cli

    parser = ap.ArgumentParser()
    cli.add_arguments(parser)
    args = parser.parse_args(
        [
            "--job",
            str(job),
            "--server",
            url,
            "--output",
            str(output),
            "--progress",
            "log",
            "--health-timeout",
            "30",
        ]
    )
    r0 = resource.getrusage(resource.RUSAGE_SELF)
    t0 = time.perf_counter()
    code = cli.run(args)
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    if code != 0:
        raise SystemExit(f"draftgen generate exited {code}")
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    records = sum(1 for p in (output / "pre").glob("shard-*.jsonl") for _ in open(p))
    return wall, cpu, records


def profile_shares(
    url: str, work: Path, requests: int, prompt_tokens: int, in_flight: int
) -> list[list]:
    """Where the generator's main-thread CPU time goes per request: two profiled runs (n/6 and
    n requests), the difference of each part's cumulative time over the difference of the total,
    so start-up (imports, tokenizer load) is not counted."""
    import cProfile
    import pstats

    names = {
        "httpcore connection pool bookkeeping (_assign_requests_to_connections)": lambda k: (
            k[2] == "_assign_requests_to_connections"
        ),
        "JSON decoding of /generate answers": lambda k: k[2] == "json" and "httpx" in k[0],
        "record encoding (encode_line)": lambda k: k[2] == "encode_line",
        "os.write + fsync of records": lambda k: (
            k[2] in ("<built-in method posix.write>", "<built-in method posix.fsync>")
        ),
        "admission (_admit: budget and server rules)": lambda k: k[2] == "_admit",
    }
    figures = []
    for n in (max(1, requests // 6), requests):
        d = work / f"profiled-{n}"
        d.mkdir()
        job = _write_job(d, n, prompt_tokens, in_flight)
        prof = cProfile.Profile()
        prof.enable()
        _run_generator(job, url, d / "out")
        prof.disable()
        stats = pstats.Stats(prof).stats  # (file, line, name) -> (cc, nc, tottime, cumtime, ...)
        total = sum(v[2] for v in stats.values())
        figures.append(
            (
                total,
                {
                    name: sum(v[3] for k, v in stats.items() if pred(k))
                    for name, pred in names.items()
                },
            )
        )
    (t0, p0), (t1, p1) = figures
    return [[name, round(100 * (p1[name] - p0[name]) / max(1e-9, t1 - t0), 1)] for name in names]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--requests",
        type=int,
        default=3000,
        help="requests of the large run (the small run makes a sixth)",
    )
    parser.add_argument("--output-tokens", type=int, default=1000)
    parser.add_argument("--prompt-tokens", type=int, default=1000)
    parser.add_argument("--in-flight", type=int, default=128)
    args = parser.parse_args()
    import logging

    logging.disable(logging.WARNING)  # the per-run log lines would drown the table
    res = Result(
        "client_cost",
        "Client cost: one generator process on one core, instant server",
        ["run", "requests", "wall s", "CPU s", "req/s", "completion tok/s"],
    )

    try:
        os.sched_setaffinity(0, {0})  # the generator: one core
    except (AttributeError, OSError):
        pass
    work = BENCH_DIR / "client-cost"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    port = free_port()
    server_cmd = [
        str(PY),
        str(REPO / "bench" / "canned_server.py"),
        "--port",
        str(port),
        "--output-tokens",
        str(args.output_tokens),
    ]
    if shutil.which("taskset") and (os.cpu_count() or 1) > 1:
        server_cmd = ["taskset", "-c", "1", *server_cmd]
    server = subprocess.Popen(server_cmd, stdout=subprocess.PIPE, text=True)
    try:
        server.stdout.readline()  # ready line
        url = f"http://127.0.0.1:{port}"
        runs = []
        for n in (max(1, args.requests // 6), args.requests):
            d = work / f"n{n}"
            d.mkdir()
            job = _write_job(d, n, args.prompt_tokens, args.in_flight)
            wall, cpu, records = _run_generator(job, url, d / "out")
            runs.append((n, wall, cpu, records))
        shares = profile_shares(
            url, work, max(60, args.requests // 3), args.prompt_tokens, args.in_flight
        )
    finally:
        server.terminate()
        server.wait(10)
        shutil.rmtree(work, ignore_errors=True)

    (n0, w0, c0, r0), (n1, w1, c1, r1) = runs
    dn = max(1, r1 - r0)
    req_s = dn / max(1e-9, w1 - w0)
    tok_s = req_s * args.output_tokens
    cpu_per_m = (c1 - c0) / (dn * args.output_tokens) * 1e6
    cpu_share = (c1 - c0) / max(1e-9, w1 - w0)
    need = SERVERS * SERVER_TOKENS_PER_SECOND
    for n, w, c, r in runs:
        res.rows.append(
            [f"{n} requests", r, round(w, 2), round(c, 2), r / w, r * args.output_tokens / w]
        )
    res.rows.append(
        ["marginal (large − small)", dn, round(w1 - w0, 2), round(c1 - c0, 2), req_s, tok_s]
    )
    res.add_table(
        "Per million generated tokens",
        ["figure", "value"],
        [
            ["CPU seconds per 1M completion tokens", round(cpu_per_m, 2)],
            ["CPU share of one core while running", round(cpu_share, 2)],
            ["completion tokens/s one core sustains", round(tok_s)],
            [f"needed for {SERVERS} servers × {SERVER_TOKENS_PER_SECOND:,} tok/s", need],
            [
                "8-GPU servers one generator can feed at 2,000 tok/s",
                round(tok_s / SERVER_TOKENS_PER_SECOND, 1),
            ],
        ],
    )
    res.add_table(
        f"Where the generator's main-thread CPU time goes per request (cProfile, "
        f"runs of {max(60, args.requests // 3) // 6} and {max(60, args.requests // 3)} "
        "requests subtracted; cumulative times, parts may overlap)",
        ["part", "share of CPU time %"],
        shares,
    )
    res.goals.append(
        Goal(
            f"one generator feeds ≥ {SERVERS} 8-GPU servers at 1,000–2,000 tok/s each (≥ {need:,} tok/s)",
            f"{tok_s:,.0f} tok/s on one core = {tok_s / SERVER_TOKENS_PER_SECOND:.0f} servers at 2,000 tok/s",
            tok_s >= need,
            "" if tok_s >= need else "the client loop is slower than needed: profile it",
        )
    )
    res.notes.append(
        f"Each answer carries {args.output_tokens} output ids (plus ~4 characters of text per token); "
        f"each prompt is {args.prompt_tokens} pre-tokenized ids; {args.in_flight} requests in flight "
        "(fixed mode). Records are written to disk exactly as in production (fsync'd in batches)."
    )
    res.notes.append(
        "The server is bench/canned_server.py, a benchmark harness answering instantly "
        "on the other core; it is not used by any test."
    )
    res.save()


if __name__ == "__main__":
    main()
