"""The timed runs of bench/pretokenize_rate.py: the bare `tokenizers` paths and draftgen's
`iter_samples` (in-process and with worker processes) over the same prompts in interleaved rounds,
the tool-bearing comparison through a remote-code tokenizer, the CPU accounting from /proc, and a
profile of where draftgen's in-process time goes."""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from pathlib import Path

from common import TINY_KIMI, Goal
from pretokenize_workload import job_for, tools_job, write_tool_rows


def tool_bearing(work: Path, prompts: int, rounds: int) -> tuple[list[list], Goal, str]:
    """Rows, the goal and a note of the tool-bearing comparison (see the module docstring)."""
    from draftgen.generator.prompts.inputs import iter_samples, open_tokenizer
    from draftgen.generator.prompts.samples import Sample

    write_tool_rows(work / "tools-warm.jsonl", 20, seed=3)
    distinct = write_tool_rows(work / "tools.jsonl", prompts, seed=4)
    lines = (work / "tools.jsonl").read_text().splitlines()
    job = tools_job()
    ctx = open_tokenizer(job, work, workers=0)
    tok = ctx.tokenizer
    for _ in iter_samples(job, job.spec.datasets[0], base_dir=work, tokenizer_ctx=ctx):
        pass
    n = len(lines)

    def own_ids() -> None:
        for line in lines:
            row = json.loads(line)
            tok.apply_chat_template(
                row["messages"],
                tools=row["tools"],
                add_generation_prompt=True,
                tokenize=True,
                return_dict=False,
                thinking=True,
            )

    def own_text_then_encode(check: bool = False) -> None:
        for line in lines:
            row = json.loads(line)
            text = tok.apply_chat_template(
                row["messages"],
                tools=row["tools"],
                add_generation_prompt=True,
                tokenize=False,
                thinking=True,
            )
            ids = tok.encode(text)
            if check:  # the per-sample tools check draftgen made before issue 15
                decoded = tok.decode(ids, skip_special_tokens=False)
                assert all(t["function"]["name"] in decoded for t in row["tools"])

    def through_draftgen() -> None:
        count = sum(
            isinstance(item, Sample)
            for item in iter_samples(job, job.spec.datasets[1], base_dir=work, tokenizer_ctx=ctx)
        )
        assert count == n, (count, n)

    paths = [
        ("tokenizer's own apply_chat_template(tokenize=True)", own_ids),
        ("tokenizer's render, then its encode", own_text_then_encode),
        (
            "  + decode and name search per prompt (the old check)",
            lambda: own_text_then_encode(True),
        ),
        ("draftgen iter_samples, in-process", through_draftgen),
    ]
    best = {label: float("inf") for label, _ in paths}
    for _ in range(rounds):
        for label, fn in paths:
            t0 = time.perf_counter()
            fn()
            best[label] = min(best[label], time.perf_counter() - t0)
    ctx.close()
    own = n / best[paths[0][0]]
    by_hand = n / best[paths[1][0]]
    ours = n / best[paths[3][0]]
    rows = [
        [label, n, n / best[label], 1e6 * best[label] / n, (n / best[label]) / own]
        for label, _ in paths
    ]
    ratio, ratio_hand = ours / own, ours / by_hand
    goal = Goal(
        "tool-bearing prompts through a remote-code tokenizer ≥ the tokenizer's own "
        "render-then-encode rate",
        f"{ratio:.2f}× apply_chat_template(tokenize=True), {ratio_hand:.2f}× its render + encode "
        "by hand",
        ratio >= 1.0,
        "" if ratio >= 1.0 else "draftgen also parses and normalizes each row and checks its tools",
    )
    note = (
        f"Tool-bearing: {n} conversations with 1-2 tools each from a pool of 30 "
        f"({distinct} distinct tool sets), a call and its result in a third, through "
        "tiny-kimi-tiktoken (remote code, tools declared in Python); draftgen checks each "
        "distinct tool set once (cached) and each prompt's tool names on its rendered text."
    )
    return rows, goal, note


def draftgen_rate(workdir: Path, workers: int) -> tuple[float, int, int]:
    """(prompts/s, prompts, prompt tokens) of `iter_samples` over the main dataset."""
    from draftgen.generator.prompts.inputs import iter_samples, open_tokenizer
    from draftgen.generator.prompts.samples import Sample

    job = job_for(workdir, workers)
    with open_tokenizer(job, workdir, workers=workers) as ctx:
        warm, main = job.spec.datasets
        for _ in iter_samples(job, warm, base_dir=workdir, tokenizer_ctx=ctx):
            pass
        t0 = time.perf_counter()
        n = tokens = 0
        for item in iter_samples(job, main, base_dir=workdir, tokenizer_ctx=ctx):
            if isinstance(item, Sample):
                n += 1
                tokens += len(item.input_ids)
        dt = time.perf_counter() - t0
    return n / dt, n, tokens


_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
ENCODE_METHODS = tuple(
    f"<method '{m}' of 'tokenizers.Tokenizer' objects>"
    for m in ("encode", "encode_batch", "encode_batch_fast")
)


def process_cpu(pid: int) -> float:
    """CPU seconds (user + system) a process has used so far; 0 when it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / _TICK


def machine_busy() -> float:
    """CPU seconds all processes on the machine have used so far (from /proc/stat)."""
    try:
        v = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
    except (OSError, ValueError):
        return float("nan")
    return (sum(v) - v[3] - v[4]) / _TICK  # all but idle and iowait


def profile_shares(workdir: Path) -> dict[str, float]:
    """Shares of draftgen's in-process time spent encoding, rendering, parsing, and the rest."""
    import cProfile
    import pstats

    prof = cProfile.Profile()
    prof.enable()
    draftgen_rate(workdir, 0)
    prof.disable()
    stats = pstats.Stats(prof).stats  # (file, line, name) -> (cc, nc, tottime, cumtime, callers)
    total = sum(v[2] for v in stats.values())
    encode = sum(v[2] for k, v in stats.items() if k[2] in ENCODE_METHODS)
    load = sum(v[2] for k, v in stats.items() if k[2] == "<built-in method from_file>")
    render = sum(v[3] for k, v in stats.items() if k[2] == "render_jinja_template")
    parse = sum(v[2] for k, v in stats.items() if k[2] == "raw_decode")
    total -= load  # the tokenizer load is start-up, not per prompt
    return {
        "tokenizers encode (the bare work)": encode / total,
        "chat template rendering (Jinja)": render / total,
        "JSON parsing of rows": parse / total,
        "the rest (ids, checks, hand-over, GC)": max(0.0, 1 - (encode + render + parse) / total),
    }


@dataclass
class Timings:
    """The best round of each path over the main dataset's `n` prompts (`tokens` in all)."""

    n: int
    tokens: int
    paths: list[tuple[str, int | str]]
    """(label, processes) in the order they ran; the first is the bare encode_batch."""
    labels: dict[int, str]
    """worker count (0: in-process) -> its draftgen path's label"""
    best: dict[str, float]
    """label -> seconds of its best round"""
    cpu: dict[str, tuple[float, float, float]]
    """label -> (main process CPU s, workers' CPU s, all processes' CPU s) of its best round"""


def time_paths(work: Path, rounds: int, max_workers: int) -> Timings:
    """The bare paths and draftgen's, over `work`'s main.jsonl (warm.jsonl warms each pool up)."""
    from draftgen.generator.prompts.pretokenize import load_tokenizer

    tok = load_tokenizer(str(TINY_KIMI), False)
    backend = tok.backend_tokenizer
    lines = (work / "main.jsonl").read_text().splitlines()
    rows = [json.loads(line)["messages"] for line in lines]
    texts = [
        tok.apply_chat_template(m, add_generation_prompt=True, tokenize=False, thinking=True)
        for m in rows
    ]
    n = len(texts)
    tokens = sum(len(e.ids) for e in backend.encode_batch(texts, add_special_tokens=False))

    def bare_encode() -> None:
        backend.encode_batch(texts, add_special_tokens=False)

    def one_by_one() -> None:
        for t in texts:
            backend.encode(t, add_special_tokens=False)

    def batch_fast() -> None:
        backend.encode_batch_fast(texts, add_special_tokens=False)

    def render_only() -> None:
        for m in rows:
            tok.apply_chat_template(m, add_generation_prompt=True, tokenize=False, thinking=True)

    def bare_full() -> None:
        full = [
            tok.apply_chat_template(
                json.loads(line)["messages"],
                add_generation_prompt=True,
                tokenize=False,
                thinking=True,
            )
            for line in lines
        ]
        backend.encode_batch(full, add_special_tokens=False)

    from draftgen.generator.prompts.inputs import iter_samples, open_tokenizer

    worker_counts = [0] + list(range(1, max_workers + 1))
    contexts = {}
    for w in worker_counts:  # every pool started and warmed up before any timing
        job = job_for(work, w)
        contexts[w] = (job, open_tokenizer(job, work, workers=w))
        for _ in iter_samples(
            job, job.spec.datasets[0], base_dir=work, tokenizer_ctx=contexts[w][1]
        ):
            pass

    def through_draftgen(w: int):
        job, ctx = contexts[w]

        def run() -> None:
            count = sum(
                1 for _ in iter_samples(job, job.spec.datasets[1], base_dir=work, tokenizer_ctx=ctx)
            )
            assert count == n, (count, n)

        return run

    paths = [
        ("bare encode_batch of rendered text", "1 thread", bare_encode, []),
        ("  encode one by one (same strings)", "1 thread", one_by_one, []),
        ("  encode_batch_fast (same ids, no offsets)", "1 thread", batch_fast, []),
        ("  rendering alone (chat template)", 1, render_only, []),
        ("bare JSON parse + render + encode_batch", 1, bare_full, []),
    ]
    labels = {}
    for w in worker_counts:
        labels[w] = (
            "draftgen iter_samples, in-process"
            if w == 0
            else f"draftgen iter_samples, {w} worker{'s' if w > 1 else ''}"
        )
        paths.append((labels[w], max(1, w), through_draftgen(w), contexts[w][1].worker_pids()))
    best = {label: float("inf") for label, _, _, _ in paths}
    cpu = {}  # label -> (main process CPU s, workers' CPU s, all processes' CPU s) of its best round
    for _ in range(rounds):  # interleaved rounds, best of each: the machine is noisy
        for label, _, fn, pids in paths:
            c0, w0, m0 = time.process_time(), sum(map(process_cpu, pids)), machine_busy()
            t0 = time.perf_counter()
            fn()
            dt = time.perf_counter() - t0
            if dt < best[label]:
                best[label] = dt
                cpu[label] = (
                    time.process_time() - c0,
                    sum(map(process_cpu, pids)) - w0,
                    machine_busy() - m0,
                )
    for _, (_job, ctx) in contexts.items():
        ctx.close()
    return Timings(n, tokens, [(p[0], p[1]) for p in paths], labels, best, cpu)
