"""Manifests carry `schemaVersion`: this draftgen reads its own version and the one before (the
layout without the key) and refuses a newer one, naming what it found, what it reads and the fix,
in `generate` (resume), `stats`, `export` and `top`."""

from __future__ import annotations

import json

import pytest

from draftgen.cli import main
from draftgen.output.manifest import SCHEMA_VERSION, NewerSchema
from draftgen.output.resume import scan_dataset
from draftgen.spec import Budget
from draftgen.top.sources import DirectorySource

from .helpers import write_output


def _set_version(root, version):
    for path in (root / "manifest.json", root / "chat" / "manifest.json"):
        data = json.loads(path.read_text())
        if version is None:
            del data["schemaVersion"]
        else:
            data["schemaVersion"] = version
        if "datasets" in data:
            for entry in data["datasets"].values():
                entry.pop("schemaVersion", None)
        path.write_text(json.dumps(data))


def test_manifests_are_written_with_the_current_version(tmp_path):
    root = write_output(tmp_path)
    job = json.loads((root / "manifest.json").read_text())
    assert job["schemaVersion"] == SCHEMA_VERSION == 2
    assert json.loads((root / "chat" / "manifest.json").read_text())["schemaVersion"] == 2


@pytest.mark.parametrize("version", [None, 1, 2], ids=["unversioned", "v1", "v2"])
def test_this_version_and_the_one_before_are_read(tmp_path, capsys, version):
    root = write_output(tmp_path / "run")
    _set_version(root, version)
    assert main(["stats", "--json", str(root)]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["datasets"][0]["samples"] == 3 and got["datasets"][0]["done"] is False
    assert main(["export", str(root), "--format", "specforge", "--out", str(tmp_path / "e")]) == 0
    assert DirectorySource(root).read().error is None
    assert scan_dataset(root / "chat", "chat", Budget(), shard_max_records=100).ledger.samples == 3


def _refusal(message: str) -> None:
    assert "schemaVersion 3" in message and "reads 1 and 2" in message
    assert "upgrade draftgen" in message


def test_a_newer_version_is_refused_by_every_reader(tmp_path, capsys):
    root = write_output(tmp_path / "run")
    _set_version(root, 3)
    assert main(["stats", str(root)]) == 2
    _refusal(capsys.readouterr().err)
    assert main(["export", str(root), "--format", "specforge", "--out", str(tmp_path / "e")]) == 2
    _refusal(capsys.readouterr().err)
    assert not (tmp_path / "e").exists()
    error = DirectorySource(root).read().error
    assert error is not None
    _refusal(error)
    with pytest.raises(NewerSchema) as err:
        scan_dataset(root / "chat", "chat", Budget(), shard_max_records=100)
    _refusal(str(err.value))
