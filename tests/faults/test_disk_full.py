"""The output volume fills up: a real small filesystem (a tmpfs mounted for the test; root
only) under the output directory. The generator stops with its own exit code and a clear
error, leaves no torn record for resume to count, and finishes exactly once space returns.

(tests/generator/test_resume_e2e.py covers the same with a file-size limit, which needs no root;
a full filesystem differs in that *every* write fails: manifests, rejects and new shards too.)"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from draftgen.output.resume import scan_dataset
from draftgen.spec import Budget

from .gen_run import (
    Run,
    check_consistent,
    expected_ids,
    generate_args,
    prompt_rows,
    write_job,
    write_jsonl,
)

pytestmark = pytest.mark.sglang


def _mount_tmpfs(path: Path, size: str) -> None:
    path.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs", str(path)],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        pytest.skip(
            f"cannot mount a tmpfs here ({done.stderr.strip()}); "
            "tests/generator/test_resume_e2e.py covers a full disk with RLIMIT_FSIZE"
        )


@pytest.fixture
def small_volume(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("mounting a small filesystem needs root")
    vol = tmp_path / "vol"
    # Pages for the lock lease and the dataset fingerprint, then room for part of the records.
    _mount_tmpfs(vol, "24k")
    yield vol
    subprocess.run(["umount", "-l", str(vol)], check=False)


def test_full_volume_stops_cleanly_and_resumes_when_space_returns(
    tmp_path, tiny_kimi, sglang_server, small_volume
):
    rows = prompt_rows(30, "a")
    rows += ['{"id": "broken", "prompt": ']  # a reject too: rejects.jsonl shares the volume
    write_jsonl(tmp_path / "all.jsonl", rows)
    job = write_job(
        tmp_path,
        tiny_kimi,
        [{"name": "all", "source": "all.jsonl", "format": "prompt"}],
        sampling={"maxNewTokens": 6},
    )
    out = small_volume / "run"
    args = generate_args(job, sglang_server.url, out)

    code, log = Run(args, tmp_path).finish()
    assert code == 5, log[-3000:]
    assert "disk full" in log and "free space on the output volume" in log
    assert "Traceback" not in log

    # Every line on the volume is a whole record; a resume counts exactly those.
    shard_lines = []
    for shard in sorted((out / "all").glob("shard-*.jsonl")):
        data = shard.read_bytes()
        assert not data or data.endswith(b"\n"), f"{shard.name} ends with half a record"
        shard_lines += [json.loads(line) for line in data.splitlines()]
    written = len(shard_lines)
    assert 0 < written < 30, "the volume should fill part-way through the job"
    state = scan_dataset(out / "all", "all", Budget(), shard_max_records=10_000)
    assert state.ledger.samples == written and state.torn_bytes == 0 and state.corrupt_lines == 0
    assert not list(out.rglob(".*.tmp")), "a half-written manifest was left behind"

    # Space returns (the volume grows): the same command finishes the job exactly.
    subprocess.run(["mount", "-o", "remount,size=4m", str(small_volume)], check=True)
    code, log = Run(args, tmp_path).finish()
    assert code == 0, log[-3000:]
    recs = check_consistent(out, ["all"])["all"]
    assert {r["id"] for r in recs} == set(expected_ids(job, "all"))
    reasons = [
        r["reason"]
        for r in json.loads(
            "[" + ",".join((out / "all" / "rejects.jsonl").read_text().splitlines()) + "]"
        )
    ]
    assert reasons == ["malformed_json"]
