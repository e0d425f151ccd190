"""`draftgen export` of a job that is still running says so (the export holds only the records
written so far); of a finished job, it says nothing of the kind."""

from __future__ import annotations

from draftgen.cli import main
from draftgen.output.lock import OutputLock

from .builders import synthetic_records, write_output


def test_export_of_a_running_job_warns(tmp_path, capsys):
    src = write_output(tmp_path / "run", {"chat": synthetic_records("chat", 3)}, shard_size=10)
    with OutputLock(src):
        assert main(["export", str(src), "--format", "parquet", "--out", str(tmp_path / "a")]) == 0
    err = capsys.readouterr().err
    assert "is still being written (pid" in err and "export again when the run has ended" in err
    assert main(["export", str(src), "--format", "parquet", "--out", str(tmp_path / "b")]) == 0
    assert "still being written" not in capsys.readouterr().err
