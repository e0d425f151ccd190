"""One CLI style (issue 20, item 4): every command takes the job as FILE, `-f/--job FILE` or `-`
(standard input), reads multi-document YAML, exits by one table; `--version`; no traceback on a
closed pipe; `export --mix a=0.5 b=2 DIR`; ISO 8601 log times and RFC 3339 `updated_at`."""

from __future__ import annotations

import io
import logging
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from draftgen.cli import main
from draftgen.contract.generator_cli import ExitCode
from draftgen.output.ledger import Ledger
from draftgen.spec import Budget
from draftgen.timefmt import IsoFormatter, rfc3339
from tests.export.builders import synthetic_records, write_output

REPO = Path(__file__).resolve().parents[2]
KIMI = REPO / "examples" / "kimi-k2.5.yaml"
RFC3339 = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$")


def _stdin(monkeypatch, text: str) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO(text))


@pytest.mark.parametrize("form", ["positional", "-f", "--job", "stdin"])
@pytest.mark.parametrize("command", ["validate", "plan", "operator --render"])
def test_every_command_takes_the_job_the_same_way(monkeypatch, capsys, command, form):
    args = {
        "positional": [str(KIMI)],
        "-f": ["-f", str(KIMI)],
        "--job": ["--job", str(KIMI)],
        "stdin": ["-f", "-"],
    }[form]
    if form == "stdin":
        _stdin(monkeypatch, KIMI.read_text())
    assert main([*command.split(), *args]) == ExitCode.OK, capsys.readouterr().err


def test_generate_takes_the_job_the_same_way(monkeypatch, capsys):
    # A job refused before any server is asked: the file was read from each form.
    bad = yaml.safe_load(KIMI.read_text())
    bad["spec"]["sampling"] = {"maxNewToken": 5}
    text = yaml.safe_dump(bad)
    _stdin(monkeypatch, text)
    assert main(["generate", "-", "--server", "http://127.0.0.1:9"]) == ExitCode.INVALID
    assert "<stdin> is invalid" in capsys.readouterr().err
    _stdin(monkeypatch, text)
    assert main(["generate", "-f", "-", "--server", "http://127.0.0.1:9"]) == ExitCode.INVALID
    assert "did you mean `maxNewTokens`?" in capsys.readouterr().err


def test_no_job_named_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["plan"])
    assert exit_.value.code == ExitCode.INVALID
    assert "name the job: FILE or -f FILE" in capsys.readouterr().err


def test_helm_template_output_validates_each_job_and_skips_other_kinds(monkeypatch, capsys):
    kimi = yaml.safe_load(KIMI.read_text())
    broken = yaml.safe_load(KIMI.read_text())
    broken["metadata"]["name"] = "broken"
    broken["spec"]["server"]["replica"] = 2
    other = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}
    _stdin(monkeypatch, yaml.safe_dump_all([other, kimi, broken]))
    assert main(["validate", "-f", "-"]) == ExitCode.INVALID
    out, err = capsys.readouterr()
    assert "<stdin>#2: GenerationJob kimi-k25-eagle3 is valid" in out
    assert "<stdin>#3: GenerationJob is invalid" in err
    assert "spec.server.replica: unknown field; did you mean `replicas`?" in err
    assert "ConfigMap" not in out + err


def test_version(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0
    assert re.match(r"^draftgen \S+\n$", capsys.readouterr().out)


def test_a_closed_pipe_ends_quietly(tmp_path):
    src = write_output(tmp_path / "run", {"chat": synthetic_records("chat", 3)})
    read, write = os.pipe()
    os.close(read)  # the reader (`head -1`) is gone before draftgen writes
    proc = subprocess.run(
        [sys.executable, "-m", "draftgen.cli", "stats", "--json", str(src)],
        stdout=write,
        stderr=subprocess.PIPE,
        text=True,
        timeout=120,
    )
    os.close(write)
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode == ExitCode.PIPE_CLOSED


def test_export_mix_does_not_swallow_the_directory(tmp_path, capsys):
    src = write_output(
        tmp_path / "run",
        {"a": synthetic_records("a", 4), "b": synthetic_records("b", 4)},
    )
    out = tmp_path / "out"
    code = main(["export", "--format", "parquet", "--out", str(out), "--mix", "a=0.5", "b=2",
                 str(src)])  # fmt: skip
    assert code == ExitCode.OK, capsys.readouterr().err
    assert (out / "export-summary.json").exists()


@pytest.mark.parametrize("command", ["validate", "plan", "generate", "export", "stats", "explain"])
def test_every_commands_help_ends_with_the_one_exit_code_table(capsys, command):
    with pytest.raises(SystemExit):
        main([command, "-h"])
    out = capsys.readouterr().out
    assert out.count("exit codes:") == 1
    assert all(f"{int(code):>3}  {code.__doc__}" in out for code in ExitCode)


def test_exit_code_table_is_in_the_docs():
    reference = (REPO / "docs" / "reference.md").read_text()
    for code in ExitCode:
        assert f"| {int(code)} |" in reference


def test_log_times_are_iso_8601_and_updated_at_rfc_3339():
    record = logging.LogRecord("x", logging.INFO, __file__, 1, "hello", None, None)
    line = IsoFormatter("%(asctime)s %(message)s").format(record)
    assert RFC3339.match(line.split()[0]), line
    assert rfc3339(0) == "1970-01-01T00:00:00Z"
    ledger = Ledger(dataset="d", budget=Budget(completion_tokens=10))
    assert RFC3339.match(ledger.manifest().updated_at)
