"""The workload of bench/pretokenize_rate.py: conversations of mixed sizes (some with a tool call),
tool-bearing conversations drawn from a pool of Glaive-style tools, and the jobs that read them."""

from __future__ import annotations

import json
import random
from pathlib import Path

from common import MODELS, PLAIN_WORDS, TINY_KIMI_MODEL, job_document

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
