"""Prompts per second of the pre-tokenizer (iter_samples: read, normalize, render, encode, checks)
against bare `tokenizers` batch encoding of the same rendered strings. Not a test: run

    .cache/venv/bin/python -m tests.generator_input.measure_throughput [N]

(needs .cache/models/tiny-kimi; writes its data to a temporary directory). On a shared machine
wall-clock rates move with the load, so CPU milliseconds per prompt are printed as well (for the
pool: the workers' CPU time without their start-up, measured on an idle pool)."""

from __future__ import annotations

import json
import os
import random
import resource
import sys
import tempfile
import time
from pathlib import Path

from draftgen.generator.prompts.inputs import iter_samples, open_tokenizer
from draftgen.generator.prompts.samples import Sample
from draftgen.spec import load_job, parse_job
from tests.jobs import job_document

REPO = Path(__file__).resolve().parents[2]
TINY_KIMI = REPO / ".cache" / "models" / "tiny-kimi"
WORDS = [
    "the",
    "model",
    "reads",
    "every",
    "token",
    "of",
    "the",
    "prompt",
    "and",
    "answers",
    "with",
    "reasoning",
    "first",
    "then",
    "code",
    "tools",
    "weather",
    "city",
    "budget",
    "drafter",
    "speculative",
    "decoding",
    "kernel",
    "cache",
    "latency",
]


def rows(n: int) -> list[dict]:
    rng = random.Random(0)
    out = []
    for i in range(n):
        text = lambda k: " ".join(rng.choice(WORDS) for _ in range(k))  # noqa: E731
        turns = [{"role": "system", "content": text(20)}]
        for _ in range(rng.randint(1, 3)):
            turns += [
                {"role": "user", "content": text(rng.randint(40, 300))},
                {"role": "assistant", "content": text(rng.randint(40, 300))},
            ]
        turns.append({"role": "user", "content": text(80)})
        row = {"id": f"r{i}", "messages": turns}
        if i % 4 == 0:
            row["tools"] = [
                {
                    "type": "function",
                    "function": {
                        "name": f"tool_{i}",
                        "description": text(10),
                        "parameters": {
                            "type": "object",
                            "properties": {"city": {"type": "string"}},
                        },
                    },
                }
            ]
        out.append(row)
    return out


def cpu(who: int) -> float:
    r = resource.getrusage(who)
    return r.ru_utime + r.ru_stime


def main(n: int) -> None:
    print(f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}")
    model = load_job(REPO / "examples" / "demo.yaml").spec.model.to_wire()
    model["weights"] = str(TINY_KIMI)
    with tempfile.TemporaryDirectory() as tmp:
        data = rows(n)
        Path(tmp, "d.jsonl").write_text("\n".join(json.dumps(r) for r in data) + "\n")
        job = parse_job(
            job_document(
                "m",
                model=model,
                datasets=[{"name": "d", "source": "d.jsonl", "format": "messages"}],
            )
        )
        ds = job.spec.datasets[0]
        # what an idle pool costs (process start, imports, tokenizer load), to subtract below
        c0 = cpu(resource.RUSAGE_CHILDREN)
        with open_tokenizer(job, Path(tmp), workers=2) as ctx:
            [f.result() for f in [ctx._pool.submit(time.sleep, 0.5) for _ in range(2)]]
        idle_pool = cpu(resource.RUSAGE_CHILDREN) - c0
        for workers in (2, 0):
            c0, m0 = cpu(resource.RUSAGE_CHILDREN), cpu(resource.RUSAGE_SELF)
            with open_tokenizer(job, Path(tmp), workers=workers) as ctx:
                if workers:  # start the workers before the clock runs
                    [f.result() for f in [ctx._pool.submit(time.sleep, 0.5) for _ in range(2)]]
                t = time.perf_counter()
                items = list(iter_samples(job, ds, base_dir=Path(tmp), tokenizer_ctx=ctx))
                dt = time.perf_counter() - t
            used = (
                cpu(resource.RUSAGE_SELF)
                - m0
                + cpu(resource.RUSAGE_CHILDREN)
                - c0
                - (idle_pool if workers else 0)
            )
            got = [i for i in items if isinstance(i, Sample)]
            tokens = sum(len(s.input_ids) for s in got)
            print(
                f"iter_samples, {workers or 'no'} worker processes: {len(got) / dt:,.0f} prompts/s, "
                f"{tokens / dt:,.0f} tokens/s ({tokens / len(got):,.0f} tokens/prompt), "
                f"{1000 * used / len(got):.2f} CPU ms/prompt"
            )
        tok = ctx.tokenizer
        texts = [
            tok.apply_chat_template(
                r["messages"],
                tools=r.get("tools"),
                add_generation_prompt=True,
                tokenize=False,
                thinking=True,
            )
            for r in data
        ]
        from tokenizers import Tokenizer

        bare = Tokenizer.from_file(str(TINY_KIMI / "tokenizer.json"))
        m0, t = cpu(resource.RUSAGE_SELF), time.perf_counter()
        enc = bare.encode_batch(texts, add_special_tokens=False)
        dt, used = time.perf_counter() - t, cpu(resource.RUSAGE_SELF) - m0
        assert [e.ids for e in enc] == [s.input_ids for s in got]  # the same ids
        print(
            f"bare tokenizers encode_batch of the same rendered strings: {n / dt:,.0f} prompts/s, "
            f"{sum(len(e.ids) for e in enc) / dt:,.0f} tokens/s, {1000 * used / n:.2f} CPU ms/prompt"
        )
        m0, t = cpu(resource.RUSAGE_SELF), time.perf_counter()
        for text in texts:
            bare.encode(text, add_special_tokens=False)
        dt, used = time.perf_counter() - t, cpu(resource.RUSAGE_SELF) - m0
        print(
            f"bare tokenizers encode, one string at a time: {n / dt:,.0f} prompts/s, "
            f"{1000 * used / n:.2f} CPU ms/prompt"
        )


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 2000)
