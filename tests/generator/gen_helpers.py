"""Helpers for the generator's end-to-end tests: write a job, run it in-process or as the CLI,
read the records back."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx

from tests.jobs import job_document, write_job_yaml

KIMI_SPECIAL_TOKENS = [
    "<think>",
    "</think>",
    "<|im_end|>",
    "<|tool_calls_section_begin|>",
    "<|tool_call_begin|>",
    "<|tool_call_argument_begin|>",
    "<|tool_call_end|>",
]
THINK = 163606

WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather for a city",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}


def template_ids(
    tokenizer: Any, messages: list[dict], tools: list[dict] | None = None, *, thinking: bool = True
) -> list[int]:
    """The prompt ids of `messages` (and `tools`) by the tokenizer's own chat template, with the
    generation prompt: what the generator must send for them."""
    return list(
        tokenizer.apply_chat_template(
            messages,
            tools=tools,
            add_generation_prompt=True,
            tokenize=True,
            return_dict=False,
            thinking=thinking,
        )
    )


def write_jsonl(path: Path, rows: list[Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        for row in rows:
            f.write(row if isinstance(row, str) else json.dumps(row))
            f.write("\n")
    return path


def prompt_rows(n: int, prefix: str = "q") -> list[dict]:
    topics = ["rain", "TCP", "Kubernetes", "photosynthesis", "prime numbers", "Lagos", "tea"]
    return [
        {"id": f"{prefix}{i:03d}", "prompt": f"Tell me about {topics[i % len(topics)]}, part {i}."}
        for i in range(n)
    ]


def write_job(
    directory: Path,
    model: Path,
    datasets: list[dict],
    *,
    sampling: dict | None = None,
    generator: dict | None = None,
    model_extra: dict | None = None,
) -> Path:
    spec_model = {
        "weights": str(model),
        "chatTemplateKwargs": {"thinking": True},
        "specialTokens": KIMI_SPECIAL_TOKENS,
        "generationPrefix": "<think>",
    }
    spec_model.update(model_extra or {})
    return write_job_yaml(
        directory / "job.yaml",
        job_document(
            "test",
            model=spec_model,
            server={"tensorParallelSize": 1},
            sampling={"temperature": 0.0, "maxNewTokens": 12, **(sampling or {})},
            generator={"tokenizerWorkers": 1, "retries": 2, **(generator or {})},
            datasets=datasets,
        ),
    )


def write_prompt_job(
    directory: Path,
    model: Path,
    rows: int,
    *,
    name: str = "p",
    prefix: str = "q",
    dataset: dict | None = None,
    **job: Any,
) -> Path:
    """A job of one `prompt` dataset `name` (`dataset` adds to it) over `rows` prompt rows written
    to `<name>.jsonl`; `job` as write_job takes it."""
    write_jsonl(directory / f"{name}.jsonl", prompt_rows(rows, prefix))
    source = {"name": name, "source": f"{name}.jsonl", "format": "prompt", **(dataset or {})}
    return write_job(directory, model, [source], **job)


def write_prompt_datasets(
    directory: Path, model: Path, datasets: dict[str, tuple[int, dict | None]], **job: Any
) -> Path:
    """A job of `prompt` datasets, `name: (rows, budget)` each: that many prompt rows (ids
    prefixed with the name's first letter) in `<name>.jsonl`, under `budget` (None: none);
    `job` as write_job takes it."""
    sources = []
    for name, (rows, budget) in datasets.items():
        write_jsonl(directory / f"{name}.jsonl", prompt_rows(rows, name[0]))
        source = {"name": name, "source": f"{name}.jsonl", "format": "prompt"}
        sources.append(source if budget is None else {**source, "budget": budget})
    return write_job(directory, model, sources, **job)


def generate_tools_dataset(
    directory: Path, model: Path, url: str, rows: list[dict], **job: Any
) -> tuple[list[dict], str]:
    """`draftgen generate` (the CLI) of one `messages` dataset `tools` of `rows` with the
    remote-code tokenizer of `model` (`trustRemoteCode`) against `url`, into `directory/out`;
    `job` as write_job takes it. Its records and its output; it must succeed."""
    write_jsonl(directory / "tools.jsonl", rows)
    job_path = write_job(
        directory,
        model,
        [{"name": "tools", "source": "tools.jsonl", "format": "messages"}],
        model_extra={"trustRemoteCode": True},
        **job,
    )
    proc = cli(*generate_command(job_path, directory / "out", url))
    out, _ = proc.communicate(timeout=300)
    assert proc.returncode == 0, out[-3000:]
    return records(directory / "out" / "tools"), out


def run_inprocess(job_path: Path, url: str, output: Path, **settings: Any):
    """Run the job in this process (the real input side, the real server); the Runner."""
    from draftgen.generator.prompts.inputs import open_tokenizer, sample_source
    from draftgen.generator.run import Runner, Settings
    from draftgen.spec import load_job

    job = load_job(job_path)
    base = job_path.parent
    with open_tokenizer(job, base, workers=0) as ctx:
        runner = Runner(
            job,
            Settings(servers=[url], output=output, live_progress=False, **settings),
            sample_source(job, base, ctx),
            ctx.tokenizer,
        )
        asyncio.run(runner.run())
    return runner


def samples_of(job: Any, ctx: Any, base_dir: Path, dataset: int = 0, **kwargs: Any) -> list:
    """Every item (Sample or Reject) the input side makes of the job's `dataset`-th dataset with
    the tokenizer context `ctx`; `kwargs` as iter_samples takes them."""
    from draftgen.generator.prompts.inputs import iter_samples

    return list(
        iter_samples(
            job, job.spec.datasets[dataset], base_dir=base_dir, tokenizer_ctx=ctx, **kwargs
        )
    )


def expected_ids(job_path: Path, dataset: str) -> list[str]:
    """Every sample id the input side makes of a dataset (what a run without budget holds)."""
    from draftgen.generator.prompts.inputs import iter_samples, open_tokenizer
    from draftgen.generator.prompts.samples import Sample
    from draftgen.spec import load_job

    job = load_job(job_path)
    with open_tokenizer(job, job_path.parent, workers=0) as ctx:
        return [
            s.id
            for s in iter_samples(
                job, job.spec.dataset(dataset), base_dir=job_path.parent, tokenizer_ctx=ctx
            )
            if isinstance(s, Sample)
        ]


def records(directory: Path) -> list[dict]:
    out = []
    for shard in sorted(directory.glob("shard-*.jsonl")):
        out += [json.loads(line) for line in shard.read_text().splitlines()]
    return out


def rejects(directory: Path) -> list[dict]:
    path = directory / "rejects.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


CLI = [sys.executable, "-m", "draftgen.cli"]  # `draftgen` as this test's venv runs it


def generate_command(
    job: Path | str, output: Path | str, *servers: str, extra: tuple[str, ...] = ()
) -> list[str]:
    """The words of `draftgen generate` of `job` against `servers` into `output`, its progress
    as log lines (not a live bar), then `extra`."""
    return [
        "generate",
        "--job",
        str(job),
        *[arg for url in servers for arg in ("--server", url)],
        "--output",
        str(output),
        "--progress",
        "log",
        *extra,
    ]


def cli(*args: str, **kwargs: Any) -> subprocess.Popen:
    """`draftgen ...` as a subprocess of this test's venv."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    return subprocess.Popen(
        [*CLI, *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        **kwargs,
    )


def direct_generate(
    url: str, input_ids: list[int], max_new_tokens: int, *, timeout: float = 120
) -> dict[str, Any]:
    """A greedy `/generate` of `input_ids` straight to the server at `url`, with the sampling
    parameters the generator sends: the output ids a greedy record must hold. The response."""
    response = httpx.post(
        f"{url}/generate",
        timeout=timeout,
        json={
            "input_ids": input_ids,
            "sampling_params": {
                "temperature": 0.0,
                "max_new_tokens": max_new_tokens,
                "skip_special_tokens": False,
                "no_stop_trim": True,
            },
        },
    )
    return response.json()
