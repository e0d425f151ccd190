"""Running `draftgen generate` as a real process for the fault tests, and reading back what it
left: records, rejects, manifests, and the consistency checks every fault test ends with."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

# The generator engineers' helpers (job files, prompt rows, reading records back).
from tests.generator.gen_helpers import (  # noqa: F401
    expected_ids,
    prompt_rows,
    records,
    rejects,
    write_job,
    write_jsonl,
    write_prompt_datasets,
    write_prompt_job,
)


def generate_args(job: Path, server: str, out: Path) -> list[str]:
    return [
        sys.executable,
        "-m",
        "draftgen.cli",
        "generate",
        "--job",
        str(job),
        "--server",
        server,
        "--output",
        str(out),
        "--progress",
        "log",
        "--health-timeout",
        "120",
    ]


class Run:
    """One `draftgen generate` process; its output goes to a file (a pipe could be held open by
    a process it left behind, and reading it would then never end)."""

    _count = 0

    def __init__(self, args: list[str], log_dir: Path, **kwargs: Any) -> None:
        Run._count += 1
        self.log_path = Path(log_dir) / f"generate-{Run._count:03d}.log"
        env = {**os.environ, "PYTHONUNBUFFERED": "1", **kwargs.pop("env", {})}
        with open(self.log_path, "w") as log:
            self.proc = subprocess.Popen(
                args, env=env, stdout=log, stderr=subprocess.STDOUT, **kwargs
            )

    def poll(self) -> int | None:
        return self.proc.poll()

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def finish(self, timeout: float = 300) -> tuple[int, str]:
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError(
                f"draftgen generate did not end within {timeout} s:\n{self.log()[-3000:]}"
            ) from None
        return self.proc.returncode, self.log()

    def kill_when(self, ready: Callable[[], bool], timeout: float = 300) -> bool:
        """SIGKILL the process once `ready()`; False if it ended by itself first."""
        deadline = time.monotonic() + timeout
        while self.proc.poll() is None:
            if ready():
                self.proc.send_signal(signal.SIGKILL)
                self.proc.wait()
                return True
            if time.monotonic() > deadline:
                self.proc.kill()
                raise AssertionError("the moment to kill never came")
            time.sleep(0.01)
        return False


def record_count(out: Path) -> int:
    return sum(p.read_bytes().count(b"\n") for p in out.glob("*/shard-*.jsonl"))


def check_consistent(out: Path, datasets: list[str]) -> dict[str, list[dict]]:
    """Every record whole and unique; each manifest equal to what its records add up to."""
    by_ds = {}
    job_manifest = json.loads((out / "manifest.json").read_text())
    for name in datasets:
        recs = records(out / name)
        ids = [r["id"] for r in recs]
        dupes = [i for i, n in Counter(ids).items() if n > 1]
        assert not dupes, f"{name}: ids written twice: {dupes[:5]}"
        for r in recs:
            assert r["completion_tokens"] == len(r["output_ids"])
            assert r["prompt_tokens"] == len(r["input_ids"])
            assert r["finish_reason"] in ("stop", "length")
        manifest = json.loads((out / name / "manifest.json").read_text())
        assert manifest["samples"] == len(recs)
        assert manifest["completion_tokens"] == sum(r["completion_tokens"] for r in recs)
        assert manifest["prompt_tokens"] == sum(r["prompt_tokens"] for r in recs)
        finish = {k: sum(1 for r in recs if r["finish_reason"] == k) for k in ("stop", "length")}
        reasons = dict(manifest["finish_reasons"])
        aborted = reasons.pop("abort")  # samples whose last attempt the server aborted
        assert reasons == finish
        assert aborted <= sum(1 for r in rejects(out / name) if r.get("finish_reason") == "abort")
        # The quality report counts the records themselves, whatever the crashes in between.
        assert manifest["quality"]["truncated"] == finish["length"]
        assert manifest["quality"]["completion_tokens_mean"] == round(
            manifest["completion_tokens"] / len(recs) if recs else 0.0, 2
        )
        assert manifest["done"]
        assert job_manifest["datasets"][name]["samples"] == len(recs)
        rej = [
            (r["id"], r["source_index"], r["reason"])
            for r in rejects(out / name)
            if r["reason"] != "request_failed"
        ]
        assert len(rej) == len(set(rej)), f"{name}: a reject recorded twice"
        by_ds[name] = recs
    assert job_manifest["done"]
    assert job_manifest["samples"] == sum(len(r) for r in by_ds.values())
    assert job_manifest["completion_tokens"] == sum(
        r["completion_tokens"] for recs in by_ds.values() for r in recs
    )
    return by_ds
