"""Prompts per second of the pre-tokenizer (iter_samples: read, normalize, render, encode, checks)
against bare `tokenizers` batch encoding of the same rendered strings. Not a test: run

    .cache/venv/bin/python -m tests.generator_input.measure_throughput [N]

(needs .cache/models/tiny-kimi; writes its data to a temporary directory)."""

from __future__ import annotations

import json
import random
import sys
import tempfile
import time
from pathlib import Path

from draftgen.generator.inputs import iter_samples, open_tokenizer
from draftgen.generator.samples import Sample
from draftgen.spec import load_job, parse_job

REPO = Path(__file__).resolve().parents[2]
TINY_KIMI = REPO / ".cache" / "models" / "tiny-kimi"
WORDS = ("the model reads every token of the prompt and answers with reasoning first then code "
         "tools weather city budget drafter speculative decoding kernel cache latency").split()


def rows(n: int) -> list[dict]:
    rng = random.Random(0)
    out = []
    for i in range(n):
        text = lambda k: " ".join(rng.choice(WORDS) for _ in range(k))  # noqa: E731
        turns = [{"role": "system", "content": text(20)}]
        for _ in range(rng.randint(1, 3)):
            turns += [{"role": "user", "content": text(rng.randint(40, 300))},
                      {"role": "assistant", "content": text(rng.randint(40, 300))}]
        turns.append({"role": "user", "content": text(80)})
        row = {"id": f"r{i}", "messages": turns}
        if i % 4 == 0:
            row["tools"] = [{"type": "function", "function": {
                "name": f"tool_{i}", "description": text(10),
                "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}]
        out.append(row)
    return out


def main(n: int) -> None:
    demo = load_job(REPO / "examples" / "demo.yaml").spec.model.to_wire()
    demo["weights"] = str(TINY_KIMI)
    with tempfile.TemporaryDirectory() as tmp:
        data = rows(n)
        Path(tmp, "d.jsonl").write_text("\n".join(json.dumps(r) for r in data) + "\n")
        for workers in (2, 0):
            job = parse_job({"apiVersion": "draftgen.io/v1alpha1", "kind": "GenerationJob",
                             "metadata": {"name": "m"}, "spec": {
                                 "model": demo, "generator": {"tokenizerWorkers": max(workers, 1)},
                                 "datasets": [{"name": "d", "source": "d.jsonl", "format": "messages"}]}})
            with open_tokenizer(job, Path(tmp), workers=workers) as ctx:
                if workers:  # warm the pool (process start and tokenizer load are one-off)
                    list(ctx.render_stream([]))
                    ctx._pool.submit(int).result()
                t = time.perf_counter()
                items = list(iter_samples(job, job.spec.datasets[0], base_dir=Path(tmp), tokenizer_ctx=ctx))
                dt = time.perf_counter() - t
                got = [i for i in items if isinstance(i, Sample)]
                tokens = sum(len(s.input_ids) for s in got)
                print(f"iter_samples workers={workers}: {len(got)} prompts in {dt:.2f}s = "
                      f"{len(got) / dt:,.0f} prompts/s, {tokens / dt:,.0f} tokens/s")
            if workers == 0:
                tok = ctx.tokenizer
                t = time.perf_counter()
                texts = [tok.apply_chat_template(r["messages"][:-0 or None], tools=r.get("tools"),
                                                 add_generation_prompt=True, tokenize=False, thinking=True)
                         for r in data]
                render_dt = time.perf_counter() - t
                from tokenizers import Tokenizer

                bare = Tokenizer.from_file(str(TINY_KIMI / "tokenizer.json"))
                t = time.perf_counter()
                enc = bare.encode_batch(texts, add_special_tokens=False)
                enc_dt = time.perf_counter() - t
                assert [e.ids for e in enc] == [s.input_ids for s in got]
                print(f"jinja render alone (1 process): {n / render_dt:,.0f} prompts/s")
                print(f"bare tokenizers encode_batch of the rendered strings: {n / enc_dt:,.0f} prompts/s, "
                      f"{sum(len(e.ids) for e in enc) / enc_dt:,.0f} tokens/s")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 2000)
