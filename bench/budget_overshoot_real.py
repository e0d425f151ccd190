"""Budget overshoot against a real SGLang server (tiny-kimi on the CPU) at 64+ requests in flight.

Starts a server (or uses `--server URL`), runs one prompt dataset with a completion-token budget
in `finish` mode and a fixed concurrency, and prints the completion tokens written against the
budget, the most requests seen in flight, and the throughput.

    .cache/venv/bin/python bench/budget_overshoot_real.py [--budget 8000] [--in-flight 64]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import TINY_KIMI, TINY_KIMI_MODEL, job_document


def _write_inputs(directory: Path, rows: int, args: argparse.Namespace) -> Path:
    with open(directory / "prompts.jsonl", "w") as f:
        for i in range(rows):
            f.write(
                json.dumps({"id": f"p{i}", "prompt": f"Question {i}: explain topic {i % 97}."})
                + "\n"
            )
    job = job_document(
        "bench",
        model=TINY_KIMI_MODEL,
        sampling={"temperature": 1.0, "maxNewTokens": args.max_new_tokens, "seed": 1},
        generator={
            "concurrency": {"mode": "fixed", "maxRequests": args.in_flight},
            "onBudgetMet": "finish",
            "tokenizerWorkers": 1,
        },
        datasets=[
            {
                "name": "p",
                "source": "prompts.jsonl",
                "format": "prompt",
                "budget": {"completionTokens": args.budget},
            }
        ],
    )
    path = directory / "job.yaml"
    path.write_text(yaml.safe_dump(job))
    return path


async def _run(job_path: Path, url: str, out: Path) -> tuple[object, int]:
    from draftgen.generator.prompts.inputs import iter_samples, open_tokenizer
    from draftgen.generator.run import Runner, Settings
    from draftgen.spec import load_job

    job = load_job(job_path)
    with open_tokenizer(job, job_path.parent) as ctx:

        def source(ds, skip, max_prompt):
            return iter_samples(
                job,
                ds,
                base_dir=job_path.parent,
                tokenizer_ctx=ctx,
                skip_ids=skip,
                max_prompt_tokens=max_prompt,
            )

        runner = Runner(
            job, Settings(servers=[url], output=out, live_progress=False), source, ctx.tokenizer
        )
        peak = 0

        async def watch():
            nonlocal peak
            while True:
                peak = max(peak, sum(s.in_flight for s in runner.servers))
                await asyncio.sleep(0.05)

        watcher = asyncio.create_task(watch())
        try:
            ledgers = await runner.run()
        finally:
            watcher.cancel()
    return ledgers["p"], peak


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--server", help="use this server instead of starting one")
    parser.add_argument("--budget", type=int, default=8000)
    parser.add_argument("--in-flight", type=int, default=64)
    parser.add_argument("--max-new-tokens", type=int, default=64)
    parser.add_argument("--kv-tokens", type=int, default=16384)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        job = _write_inputs(tmp_path, rows=4 * args.budget // 10 + 100, args=args)
        server = None
        url = args.server
        if url is None:
            from draftgen.testing.sglang import SGLangServer

            server = SGLangServer(TINY_KIMI, max_total_tokens=args.kv_tokens).start()
            url = server.url
        try:
            started = time.monotonic()
            ledger, peak = asyncio.run(_run(job, url, tmp_path / "out"))
            seconds = time.monotonic() - started
        finally:
            if server is not None:
                server.stop()
    over = ledger.completion_tokens - args.budget
    print(
        f"budget {args.budget} completion tokens, maxNewTokens {args.max_new_tokens}, "
        f"fixed {args.in_flight} in flight (peak seen {peak})"
    )
    print(
        f"written {ledger.completion_tokens} in {ledger.samples} samples: "
        f"{'over' if over >= 0 else 'under'} by {abs(over)} ({100 * over / args.budget:+.2f} %), "
        f"truncated {100 * ledger.truncation_rate:.1f} %, {ledger.completion_tokens / seconds:.0f} tok/s"
    )


if __name__ == "__main__":
    main()
