"""Misuse of the command line: each gets one line naming the problem and the fix, and its
documented exit code — never a traceback. `draftgen generate` with a malformed `--server` URL, a
`--metrics-port` already in use, an `--output` that is a file, a read-only output directory
(fresh, and on resume with a torn last line to repair); `draftgen export --out` naming a file.
All of these are refused before any server is contacted (none runs here)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from draftgen.contract import layout
from draftgen.contract.generator_cli import ExitCode
from tests.export.builders import synthetic_records, write_output

from .gen_run import generate_args, prompt_rows, write_job, write_jsonl

NO_SERVER = "http://127.0.0.1:9"  # nothing listens: these runs must stop before using it


def _run(args: list[str]) -> tuple[int, list[str]]:
    done = subprocess.run(
        args,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    return done.returncode, (done.stdout + done.stderr).strip().splitlines()


def _error_lines(lines: list[str]) -> list[str]:
    # The log's own warnings about the job (e.g. spec warnings) are not the error.
    return [
        line for line in lines if " WARNING " not in line and not line.startswith("[transformers]")
    ]


@pytest.fixture
def job(tmp_path, kimi_like_tokenizer) -> Path:
    write_jsonl(tmp_path / "rows.jsonl", prompt_rows(3))
    return write_job(
        tmp_path, kimi_like_tokenizer, [{"name": "d", "source": "rows.jsonl", "format": "prompt"}]
    )


def _generate(job: Path, out: Path, server: str = NO_SERVER, *extra: str) -> list[str]:
    return [*generate_args(job, server, out), "--health-timeout", "2", *extra]


def _check(code: int, lines: list[str], expected: int, *words: str) -> None:
    text = "\n".join(lines)
    assert "Traceback" not in text, text
    errors = _error_lines(lines)
    assert len(errors) == 1, text
    assert code == expected, text
    for word in words:
        assert word in errors[0], text


@pytest.mark.parametrize(
    "server", ["http://[::1", "http://user:pw@[::1", "ftp://host:1", "http://", "not a url"]
)
def test_malformed_server_url(job, tmp_path, server):
    code, lines = _run(_generate(job, tmp_path / "out", server))
    _check(code, lines, ExitCode.INVALID, "--server", "http://")
    assert "pw" not in "\n".join(lines)  # a credential in a broken URL is not echoed


def test_metrics_port_in_use(job, tmp_path):
    with socket.socket() as sock:
        sock.bind(("0.0.0.0", 0))
        sock.listen()
        port = sock.getsockname()[1]
        code, lines = _run(_generate(job, tmp_path / "out", NO_SERVER, "--metrics-port", str(port)))
    _check(code, lines, ExitCode.INVALID, "--metrics-port", str(port), "in use")


def test_output_naming_an_existing_file(job, tmp_path):
    out = tmp_path / "out.txt"
    out.write_text("precious\n")
    code, lines = _run(_generate(job, out))
    _check(code, lines, ExitCode.INVALID, "--output", str(out), "not a directory")
    assert out.read_text() == "precious\n"


def test_export_out_naming_an_existing_file(tmp_path):
    src = write_output(tmp_path / "run", {"chat": synthetic_records("chat", 3)})
    out = tmp_path / "export.txt"
    out.write_text("precious\n")
    for extra in ([], ["--overwrite"]):
        code, lines = _run(
            [sys.executable, "-m", "draftgen.cli", "export", str(src), "--format", "parquet",
             "--out", str(out), *extra]
        )  # fmt: skip
        _check(code, lines, 2, "--out", str(out), "not a directory")
        assert out.read_text() == "precious\n"


def _mount(path: Path, options: str) -> None:
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size=1m,mode=0755,{options}", "tmpfs", str(path)],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({done.stderr.strip()})")


@pytest.fixture
def volume(tmp_path) -> Iterator[Path]:
    if os.geteuid() != 0:
        pytest.skip("mounting a read-only filesystem needs root")
    vol = tmp_path / "vol"
    vol.mkdir()
    yield vol
    subprocess.run(["umount", "-l", str(vol)], check=False)


def test_read_only_output_fresh(job, volume):
    _mount(volume, "ro")
    code, lines = _run(_generate(job, volume / "out"))
    _check(code, lines, ExitCode.INVALID, "Read-only file system", "writable")


def test_read_only_output_on_resume_with_a_torn_line(job, volume):
    _mount(volume, "rw")
    shard = layout.shard_path(volume / "d", 0) if hasattr(layout, "shard_path") else None
    (volume / "d").mkdir()
    shard = shard or volume / "d" / "shard-00000.jsonl"
    shard.write_text('{"id": "d/q000/0", "dataset": "d", "input_')  # a crash mid-write
    subprocess.run(["mount", "-o", "remount,ro", str(volume)], check=True)
    code, lines = _run(_generate(job, volume))
    _check(code, lines, ExitCode.INVALID, "Read-only file system", "writable")
    assert shard.read_text().endswith('"input_')  # nothing half-repaired
