"""`spec.exports` end to end: the generator Job the operator renders, run as rendered (only the
two paths a pod has and this machine does not, the ConfigMap's job file and the termination-
message file, point into a temporary directory) against the real CPU SGLang server, writes each
export onto the output volume; the results it leaves in its termination message become
`status.exports` through kopf against the emulator."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml

from draftgen.contract.export_cli import TERMINATION_MESSAGE_PATH, parse_results
from draftgen.contract.generator_cli import Flag
from draftgen.controller import names
from draftgen.controller.render import generator as render_generator
from draftgen.controller.settings import OperatorSettings, effective_spec
from draftgen.spec import parse_spec
from draftgen.testing.sglang import free_port
from tests.jobs import job_document

from .harness import REPO, Cluster, example_job, wait_for

pytestmark = [pytest.mark.sglang, pytest.mark.long]

# Truncated samples kept in both: with 16 new tokens the tiny model's sampled replies are often
# all cut at the limit, and an export left empty fails (dropping them by default is
# tests/export/test_text_formats.py's).
EXPORTS = [
    {"format": "speculators", "path": "exports/speculators", "options": {"includeTruncated": True}},
    {"format": "parquet", "path": "exports/parquet", "options": {"includeTruncated": True}},
]


@pytest.fixture(scope="module")
def exported(sglang_server, tiny_kimi, tmp_path_factory):
    """The rendered generator command, run; (volume, records on disk, result file text)."""
    tmp = tmp_path_factory.mktemp("exports")
    data, volume = tmp / "data", tmp / "volume"
    data.mkdir()
    volume.mkdir()
    shutil.copy(REPO / "examples" / "data" / "prompts.jsonl", data / "prompts.jsonl")
    doc = job_document(
        "exp",
        "drafters",
        model={"weights": str(tiny_kimi)},
        sampling={"temperature": 1.0, "maxNewTokens": 16},
        generator={"concurrency": {"mode": "fixed", "maxRequests": 4}},
        inputs={"mountPath": str(data)},
        output={"mountPath": str(volume), "path": "records"},
        datasets=[
            {
                "name": "prompts",
                "source": "prompts.jsonl",
                "format": "prompt",
                "budget": {"completionTokens": 120},
            }
        ],
        exports=EXPORTS,
    )
    settings = OperatorSettings()
    spec = parse_spec(effective_spec(doc["spec"], settings), name="exp")
    document = render_generator.job_document("exp", "drafters", doc["spec"])
    job = render_generator.job(spec, "exp", "drafters", [sglang_server.url], document, settings)
    container = job["spec"]["template"]["spec"]["containers"][0]
    args = list(container["args"])
    # The pod's two paths that exist only in a pod, here in the temporary directory.
    job_file, result_file = tmp / "job.yaml", tmp / "termination-log"
    job_file.write_text(document)
    assert args[args.index(Flag.JOB.value) + 1] == names.JOB_FILE
    args[args.index(Flag.JOB.value) + 1] = str(job_file)
    assert args[args.index(Flag.RESULT_FILE.value) + 1] == TERMINATION_MESSAGE_PATH
    args[args.index(Flag.RESULT_FILE.value) + 1] = str(result_file)
    # The pod's metrics port is its own; on this machine another process may hold it.
    args[args.index(Flag.METRICS_PORT.value) + 1] = str(free_port())
    assert container["command"] == ["draftgen"]
    result = subprocess.run(
        [sys.executable, "-m", "draftgen.cli", *args, "--progress", "log"],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
        cwd=tmp,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    records = [
        json.loads(line)
        for shard in sorted((volume / "records" / "prompts").glob("shard-*.jsonl"))
        for line in shard.read_text().splitlines()
    ]
    return volume, records, result_file.read_text()


def test_each_export_is_on_the_output_volume_beside_the_records(exported) -> None:
    volume, records, _ = exported
    assert records
    speculators = volume / "exports" / "speculators"
    rows = [
        json.loads(line)
        for f in sorted(speculators.glob("*.jsonl"))
        for line in f.read_text().splitlines()
    ]
    assert len(rows) == len(records)  # includeTruncated: every record
    parquet_rows = sum(
        pq.read_metadata(f).num_rows for f in (volume / "exports" / "parquet").rglob("*.parquet")
    )
    assert parquet_rows == len(records)  # includeTruncated: every record
    card = (volume / "exports" / "parquet" / "README.md").read_text()
    header = yaml.safe_load(card.split("---\n")[1])
    assert header["base_model"] == "tiny-kimi"  # the model's name, not its local path


def test_the_result_file_lists_path_rows_and_card(exported) -> None:
    volume, records, text = exported
    results = parse_results(text)
    assert [(r.format, r.path) for r in results] == [
        ("speculators", str(volume / "exports" / "speculators")),
        ("parquet", str(volume / "exports" / "parquet")),
    ]
    assert [r.rows for r in results] == [len(records), len(records)]
    assert all(r.card and Path(r.card).is_file() for r in results)


def test_status_lists_the_exports_from_the_termination_message(
    exported, cluster: Cluster, operator
) -> None:
    _, _, text = exported
    job = example_job(cluster.ns, exports=EXPORTS)
    cluster.apply(job)
    wait_for(lambda: cluster.deployment("kimi-server-0"), "the server Deployment")
    cluster.server_ready("kimi")
    wait_for(lambda: cluster.batch_job("kimi-generator"), "the generator Job")
    # What the kubelet reports of the succeeded pod: its termination message is the result file.
    cluster.generator_exited("kimi-generator-done1", 0, text)
    cluster.finish_generator("kimi")
    status = cluster.wait_phase("kimi", "Succeeded")
    expected = [
        {"format": r.format, "path": r.path, "rows": r.rows, "card": r.card}
        for r in parse_results(text)
    ]
    assert status["exports"] == expected
