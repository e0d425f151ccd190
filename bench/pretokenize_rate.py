"""Pre-tokenization (issue 7, benchmark 4): prompts/s through draftgen's pre-tokenizer against
the bare `tokenizers` batch encode of the same rendered strings, with the tiny-kimi tokenizer
(Kimi-K2's chat template with its `tool_declare` turn and thinking prefix).

Measured on the same prompts in one process, side by side:
- bare: `tokenizers.Tokenizer.encode_batch` of the prompts already rendered to text (rendering
  not timed), one thread (`RAYON_NUM_THREADS=1`): the per-core ceiling of encoding alone;
- its parts: rendering alone (`apply_chat_template(..., tokenize=False)`), one-by-one encode, and
  `encode_batch_fast` (same ids, no character offsets: the call draftgen makes, shown so the
  reader sees how much of draftgen's figure that call accounts for);
- draftgen in this process (`tokenizerWorkers: 0`), then with 1 and 2 worker processes: the
  whole input side (`iter_samples`: parse, render, encode, prefix and tool checks, hand-over).
Worker start-up is excluded (a warm-up dataset runs first on each pool). The paths run in
interleaved rounds and the best round of each is kept (the machine is shared and noisy).

Tool-bearing prompts through a remote-code tokenizer (issue 15, item 5): the same kind of
conversations, each with 1-2 Glaive-style tools drawn from a pool, through tiny-kimi-tiktoken
(`tokenization_tinykimi.py`, loaded with `trust_remote_code`, its TypeScript-like declaration
built in Python), side by side, in one process:
- the tokenizer's own path: `apply_chat_template(..., tokenize=True)` of each parsed row;
- its render-then-encode by hand: `apply_chat_template(..., tokenize=False)` then `encode`;
- the per-sample check draftgen made before: the same, plus `decode(skip_special_tokens=False)`
  and a search for the tool names in the decoded text;
- draftgen's `iter_samples` in-process (parse, render, encode, prefix, tools and fallback checks).

For the draftgen paths the CPU time is accounted as well: the main process's (parsing, hand-over,
unpacking) and the workers' (from /proc), and how many of the machine's cores all processes kept
busy meanwhile, so a scaling figure taken while other jobs held the cores says so.

    .cache/venv/bin/python bench/pretokenize_rate.py [--prompts 2000]
"""

from __future__ import annotations

import os

os.environ["RAYON_NUM_THREADS"] = "1"  # before `tokenizers` is imported: per-core figures
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import argparse
import json
import random
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import (
    BENCH_DIR,
    MODELS,
    PLAIN_WORDS,
    TINY_KIMI,
    TINY_KIMI_MODEL,
    Goal,
    Result,
    job_document,
)

TINY_KIMI_TIKTOKEN = MODELS / "tiny-kimi-tiktoken"

# English filler plus code, numbers and non-ASCII text: what a tokenizer finds hard.
WORDS = [
    *PLAIN_WORDS,
    "def",
    "return",
    "class",
    "import",
    "because",
    "however",
    "(x)",
    "{y}:",
    "[1,",
    "2]",
    "==",
    "!=",
    "->",
    "123",
    "4.5",
    "naïve",
    "café",
    "東京",
    "🙂",
]


def _text(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words))


def write_rows(path: Path, n: int, seed: int) -> None:
    """Conversations of mixed sizes: 1-3 turns, a system turn sometimes, a tool sometimes,
    prompts from a few dozen to a few thousand tokens."""
    rng = random.Random(seed)
    with open(path, "w") as f:
        for i in range(n):
            msgs = []
            if rng.random() < 0.3:
                msgs.append({"role": "system", "content": _text(rng, rng.randint(5, 40))})
            for _ in range(rng.choice((1, 1, 2, 3))):
                size = int(min(3000, rng.lognormvariate(4.5, 1.0)))
                msgs += [
                    {"role": "user", "content": _text(rng, size)},
                    {"role": "assistant", "content": _text(rng, rng.randint(5, 200))},
                ]
            msgs.pop()
            f.write(json.dumps({"id": f"r{i}", "messages": msgs}) + "\n")


def _tool(n: int) -> dict:
    """Glaive-style function definition number `n` (names and parameters vary with `n`)."""
    props: dict = {"query": {"type": "string", "description": f"What to look up ({n})"}}
    if n % 2:
        props["limit"] = {"type": "integer", "description": "How many results"}
    if n % 3 == 0:
        props["unit"] = {"type": "string", "enum": ["metric", "imperial"]}
    if n % 5 == 0:
        props["tags"] = {"type": "array", "items": {"type": "string"}}
    return {
        "type": "function",
        "function": {
            "name": f"tool_{n}_{PLAIN_WORDS[n % len(PLAIN_WORDS)]}",
            "description": f"Does task number {n} for the user.",
            "parameters": {"type": "object", "properties": props, "required": ["query"]},
        },
    }


def write_tool_rows(path: Path, n: int, seed: int, pool: int = 30) -> int:
    """Conversations as `write_rows`, each with 1-2 tools from a pool of `pool` definitions (a
    call and its result in a third of them); returns the number of distinct tool sets."""
    rng = random.Random(seed)
    sets = set()
    with open(path, "w") as f:
        for i in range(n):
            picks = sorted(rng.sample(range(pool), rng.choice((1, 1, 2))))
            sets.add(tuple(picks))
            tools = [_tool(k) for k in picks]
            msgs: list[dict] = [{"role": "user", "content": _text(rng, rng.randint(20, 400))}]
            if rng.random() < 0.33:
                name = tools[0]["function"]["name"]
                cid = f"functions.{name}:0"
                args = json.dumps({"query": _text(rng, 3)}, separators=(",", ":"))
                msgs += [
                    {
                        "role": "assistant",
                        "content": "",
                        "tool_calls": [
                            {
                                "id": cid,
                                "type": "function",
                                "function": {"name": name, "arguments": args},
                            }
                        ],
                    },
                    {"role": "tool", "tool_call_id": cid, "content": _text(rng, 30)},
                ]
            size = int(min(3000, rng.lognormvariate(4.5, 1.0)))
            msgs.append({"role": "user", "content": _text(rng, size)})
            f.write(json.dumps({"id": f"t{i}", "tools": tools, "messages": msgs}) + "\n")
    return len(sets)


def tools_job():
    from draftgen.spec import parse_job

    return parse_job(
        job_document(
            "pretokenize-tools",
            model={**TINY_KIMI_MODEL, "weights": str(TINY_KIMI_TIKTOKEN), "trustRemoteCode": True},
            datasets=[
                {"name": "warm", "source": "tools-warm.jsonl", "format": "messages"},
                {"name": "tools", "source": "tools.jsonl", "format": "messages"},
            ],
        )
    )


def tool_bearing(work: Path, prompts: int, rounds: int) -> tuple[list[list], Goal, str]:
    """Rows, the goal and a note of the tool-bearing comparison (see the module docstring)."""
    from draftgen.generator.inputs import iter_samples, open_tokenizer
    from draftgen.generator.samples import Sample

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


def job_for(workdir: Path, workers: int):
    from draftgen.spec import parse_job

    return parse_job(
        job_document(
            "pretokenize",
            model=TINY_KIMI_MODEL,
            generator={"tokenizerWorkers": max(1, workers)},
            datasets=[
                {"name": "warm", "source": "warm.jsonl", "format": "messages"},
                {"name": "main", "source": "main.jsonl", "format": "messages"},
            ],
        )
    )


def draftgen_rate(workdir: Path, workers: int) -> tuple[float, int, int]:
    """(prompts/s, prompts, prompt tokens) of `iter_samples` over the main dataset."""
    from draftgen.generator.inputs import iter_samples, open_tokenizer
    from draftgen.generator.samples import Sample

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--prompts", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds (best kept)")
    parser.add_argument("--max-workers", type=int, default=min(2, os.cpu_count() or 1))
    args = parser.parse_args()
    res = Result(
        "pretokenize",
        "Pre-tokenization: draftgen's input side vs the bare batch encode",
        ["path", "processes", "prompts", "prompts/s", "prompt tok/s", "÷ bare (1 core)"],
    )
    if not (TINY_KIMI / "tokenizer.json").exists():
        res.goals.append(
            Goal(
                "≥ 0.8 × bare rate per core",
                "not run",
                None,
                f"{TINY_KIMI} is missing: run `make models`",
            )
        )
        res.save()
        return
    work = BENCH_DIR / "pretokenize"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    write_rows(work / "warm.jsonl", 40, seed=1)
    write_rows(work / "main.jsonl", args.prompts, seed=2)

    from draftgen.generator.pretokenize import load_tokenizer

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

    from draftgen.generator.inputs import iter_samples, open_tokenizer

    worker_counts = [0] + list(range(1, args.max_workers + 1))
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
    for _ in range(args.rounds):  # interleaved rounds, best of each: the machine is noisy
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
    bare = n / best[paths[0][0]]
    for label, procs, _, _ in paths:
        rate = n / best[label]
        res.rows.append([label, procs, n, rate, tokens * rate / n, rate / bare])
    rates = {w: n / best[labels[w]] for w in worker_counts}
    full_s = best["bare JSON parse + render + encode_batch"]
    fast_rate = n / best["  encode_batch_fast (same ids, no offsets)"]
    cores = os.cpu_count() or 1
    cpu_rows = []
    for w in worker_counts:
        main_s, workers_s, all_s = cpu[labels[w]]
        wall = best[labels[w]]
        ours = main_s + workers_s
        cpu_rows.append(
            [
                labels[w],
                round(1e6 * main_s / n),
                round(1e6 * workers_s / n),
                round(ours / wall, 2),
                round(max(0.0, all_s - ours) / wall, 2),
            ]
        )
    shares = profile_shares(work)
    if (TINY_KIMI_TIKTOKEN / "tiktoken.model").exists():
        tool_rows, tool_goal, tool_note = tool_bearing(work, args.prompts, args.rounds)
        res.add_table(
            "Pre-tokenization of tool-bearing prompts through a remote-code tokenizer "
            "(tiny-kimi-tiktoken, one process, best of the rounds)",
            ["path", "prompts", "prompts/s", "µs/prompt", "÷ own apply_chat_template"],
            tool_rows,
        )
        res.goals.append(tool_goal)
        res.notes.append(tool_note)
    else:
        res.goals.append(
            Goal(
                "tool-bearing prompts through a remote-code tokenizer ≥ the tokenizer's own "
                "render-then-encode rate",
                "not run",
                None,
                f"{TINY_KIMI_TIKTOKEN} is missing: run `make models`",
            )
        )
    shutil.rmtree(work, ignore_errors=True)
    res.add_table(
        "Where draftgen's in-process time goes (cProfile, same prompts)",
        ["part", "share of time %"],
        [[k, round(100 * v, 1)] for k, v in shares.items()],
    )
    res.add_table(
        f"CPU of the draftgen runs (best round each; the machine has {cores} cores)",
        [
            "path",
            "main process µs/prompt",
            "workers µs/prompt",
            "cores used by draftgen",
            "cores used by other processes",
        ],
        cpu_rows,
    )

    per_core = rates[0] / bare
    res.goals.append(
        Goal(
            "draftgen ≥ 0.8 × the bare encode rate per core",
            f"{per_core:.2f}× (in-process, one core)",
            per_core >= 0.8,
            (
                ""
                if per_core >= 0.8
                else "the bare figure encodes ready-made strings; draftgen must also parse each JSON row and "
                "render the chat template "
                f"({100 * (shares['JSON parsing of rows'] + shares['chat template rendering (Jinja)']):.0f} % "
                "of its time, table below). "
            )
            + f"Against the bare parse + render + encode_batch of the same rows: {rates[0] / (n / full_s):.2f}×; "
            f"against encode_batch_fast of the ready strings (the call draftgen makes): "
            f"{rates[0] / fast_rate:.2f}×",
        )
    )
    if args.max_workers >= 2:
        top = args.max_workers
        scale = rates[top] / rates[1]
        main1, work1, _ = cpu[labels[1]]
        mainN, workN, allN = cpu[labels[top]]
        per_main, per_work = mainN / n, workN / n
        # What the CPU work allows: each worker is one process on one core, and the main process
        # needs its share of the same cores.
        ceiling = min(top / per_work, cores / (per_main + per_work)) * max(work1 / n, main1 / n)
        others = max(0.0, allN - mainN - workN) / best[labels[top]]
        res.goals.append(
            Goal(
                "pre-tokenization scales with processes",
                f"{top} workers = {scale:.2f}× 1 worker on {cores} cores "
                f"(the CPU work per prompt allows {ceiling:.2f}×)",
                scale >= 1.3 if cores >= 2 else None,
                ""
                if scale >= 1.3
                else f"during the {top}-worker rounds other processes on this machine kept {others:.2f} of "
                f"its {cores} cores busy (table above); the main process needs "
                f"{1e6 * per_main:.0f} µs of CPU per prompt beside the workers' {1e6 * per_work:.0f} µs",
            )
        )
    res.notes.append(
        f"{n} conversations (1-3 turns, system turn in 30 %, user turns of lognormal length up to "
        f"3,000 words), {tokens:,} prompt tokens in all, rendered with tiny-kimi's Kimi-K2 template "
        "(thinking on, generation prefix `<think>` checked on every prompt)."
    )
    res.save()


if __name__ == "__main__":
    main()
