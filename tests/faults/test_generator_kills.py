"""`draftgen generate` killed with SIGKILL at 20 random (seeded) moments of one job against the
real SGLang server, restarted each time: the output ends equal to an uninterrupted run's, each
id once; budgets hold; manifests agree with the records.

What "equal" means here. Three datasets, each with a well-defined answer:
- `all`: no budget, every row → exactly the ids an uninterrupted run writes;
- `first`: `maxSamples: 8` over 20 rows read in order → admission never sends more requests than
  samples left, so the set is the first 8 ids, same as an uninterrupted run's;
- `tokens`: a completion-token budget → which ids fit depends on the lengths and on timing, so
  the set is not compared; the budget is (within one sample, tokens of killed runs counted).
"""

from __future__ import annotations

import random
import time

import pytest

from tests.gate import Gate

from .gen_run import (
    Run,
    check_consistent,
    expected_ids,
    generate_args,
    record_count,
    write_prompt_datasets,
)

pytestmark = [pytest.mark.sglang, pytest.mark.long]

KILLS = 20
MAX_NEW = 6
TOKEN_BUDGET = 60
FIRST_N = 8


def _job(directory, tiny_kimi):
    return write_prompt_datasets(
        directory,
        tiny_kimi,
        {
            "all": (36, None),
            "first": (20, {"maxSamples": FIRST_N}),
            "tokens": (30, {"completionTokens": TOKEN_BUDGET}),
        },
        sampling={"temperature": 1.0, "maxNewTokens": MAX_NEW, "seed": 5},
        # Two requests at a time: records land one by one, so kills fall between any two of them
        # (with a wide window, a whole batch lands at once and the job ends too soon).
        generator={
            "tokenizerWorkers": 1,
            "retries": 3,
            "concurrency": {"mode": "fixed", "maxRequests": 2},
        },
    )


def test_twenty_sigkills_then_the_same_output(tmp_path, tiny_kimi, sglang_server):
    job = _job(tmp_path, tiny_kimi)
    datasets = ["all", "first", "tokens"]

    # The reference: one uninterrupted run.
    code, log = Run(generate_args(job, sglang_server.url, tmp_path / "calm"), tmp_path).finish()
    assert code == 0, log[-3000:]
    calm = check_consistent(tmp_path / "calm", datasets)

    out = tmp_path / "killed"
    rng = random.Random(20)
    kills, moments = 0, []
    # Through a gate: each run gets 1-2 more requests answered and the rest are held, so it can
    # never finish before its kill, however fast or slow the machine (a head start can be lost).
    with Gate(sglang_server.url, let_through=0) as gate:
        args = generate_args(job, gate.url, out)
        while kills < KILLS:
            before, more = record_count(out), rng.randint(1, 2)
            gate.allow(more)
            run = Run(args, tmp_path)
            started = time.monotonic()
            if rng.random() < 0.2:
                # Early: while it loads the tokenizer, checks the server, starts the first requests.
                delay = rng.uniform(0.0, 2.0)
                ready = lambda: time.monotonic() - started >= delay  # noqa: E731
            else:
                # Mid-job: once its 1-2 records are on disk, at a random instant after (often
                # mid-write, always with held requests in flight).
                jitter = rng.uniform(0.0, 0.2)
                reached: list[float] = []

                def ready() -> bool:
                    if not reached and record_count(out) >= before + more:
                        reached.append(time.monotonic())
                    return bool(reached) and time.monotonic() - reached[0] >= jitter

            if not run.kill_when(ready):
                break  # fewer than `more` samples were left: the job is done
            kills += 1
            moments.append((round(time.monotonic() - started, 2), record_count(out)))
        gate.open()
        code, log = Run(args, tmp_path).finish()
    assert kills == KILLS, f"only {kills} kills landed before the job ended: {moments}"
    assert code == 0, log[-3000:]
    killed = check_consistent(out, datasets)

    # Equal to the uninterrupted run where equality is defined, each id once.
    for name in ("all", "first"):
        assert {r["id"] for r in killed[name]} == {r["id"] for r in calm[name]}, name
    assert {r["id"] for r in killed["all"]} == set(expected_ids(job, "all"))
    assert {r["id"] for r in killed["first"]} == set(expected_ids(job, "first")[:FIRST_N])
    # The token budget held although killed runs' tokens had to be counted on every resume.
    for recs in (killed["tokens"], calm["tokens"]):
        total = sum(r["completion_tokens"] for r in recs)
        assert TOKEN_BUDGET - MAX_NEW < total < TOKEN_BUDGET + MAX_NEW, total
    print(f"{kills} kills at (seconds after start, records on disk): {moments}")
