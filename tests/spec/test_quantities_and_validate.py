"""Budgets as quantities (`10M`, `1.5e7`, `250k`), and `validate` that agrees with `generate`:
cheap checks by default under --local, server rules only where draftgen starts the server, one
GenerationJob per file for a local run, one verdict line."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from draftgen.cli import main
from draftgen.spec import SpecError, parse_job
from draftgen.spec.quantity import parse_quantity
from tests.jobs import dataset, job_document, kimi_like_model, write_job_yaml

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    "written, count",
    [("10M", 10_000_000), ("1.5e7", 15_000_000), ("250k", 250_000), (1.5e7, 15_000_000),
     ("2Mi", 2_097_152), (1000, 1000), ("1000", 1000)],
)  # fmt: skip
def test_a_quantity_is_a_whole_count(written, count):
    assert parse_quantity(written) == count


@pytest.mark.parametrize("written", ["1.2345k", "ten", True, "0", "-5", "1e-3"])
def test_a_count_that_is_not_whole_or_not_a_count_is_refused_naming_the_field(written):
    doc = job_document(
        model={"weights": "m"},
        datasets=[dataset("chat", "c.jsonl", "messages", budget={"completionTokens": written})],
    )
    with pytest.raises(SpecError) as err:
        parse_job(doc)
    assert "budget.completionTokens" in str(err.value)


def _local_job(tmp_path: Path, tiny_kimi: Path, **spec) -> dict:
    shutil.copy(REPO / "examples" / "data" / "chat.jsonl", tmp_path / "chat.jsonl")
    datasets = [dataset("chat", "chat.jsonl", "messages", budget={"completionTokens": "1.5e7"})]
    spec.setdefault("sampling", {"maxNewTokens": 256})  # tiny-kimi's context is 4096
    spec.setdefault("server", {"tensorParallelSize": 1})  # its 4 heads
    return job_document("q", model=kimi_like_model(tiny_kimi), datasets=datasets, **spec)


def test_a_quantity_budget_validates_and_is_shown_normalized(tmp_path, tiny_kimi, capsys):
    path = write_job_yaml(tmp_path / "job.yaml", _local_job(tmp_path, tiny_kimi))
    assert main(["validate", "--local", str(path)]) == 0
    out = capsys.readouterr().out
    assert "is valid under the local rules" in out and "completionTokens 15,000,000" in out
    assert main(["plan", str(path)]) == 0
    assert "15,000,000" in capsys.readouterr().out


def test_local_validate_refuses_a_missing_source_and_a_model_without_a_tokenizer(tmp_path, capsys):
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "config.json").write_text("{}")
    doc = job_document("q", model={"weights": "m"}, datasets=[dataset("c", "gone.jsonl", "prompt")])
    path = write_job_yaml(tmp_path / "job.yaml", doc)
    assert main(["validate", "--local", str(path)]) == 2
    err = capsys.readouterr().err
    assert "spec.datasets[0](c).source" in err and "gone.jsonl" in err
    assert "spec.model.weights" in err and "holds no tokenizer" in err
    assert main(["validate", "--local", "--spec-only", str(path)]) == 0


def test_server_rules_apply_only_where_draftgen_starts_the_server(tmp_path, tiny_kimi, capsys):
    model = tmp_path / "model"
    shutil.copytree(tiny_kimi, model)
    config = json.loads((model / "config.json").read_text())
    heads = config["num_attention_heads"]
    doc = _local_job(tmp_path, model, server={"tensorParallelSize": heads * 2})
    path = write_job_yaml(tmp_path / "job.yaml", doc)
    assert main(["validate", "--local", str(path)]) == 0  # your own server: not its rules
    capsys.readouterr()
    assert main(["validate", "--local", "--serve", str(path)]) == 2
    assert "does not divide" in capsys.readouterr().err


def test_max_new_tokens_beyond_the_models_context_is_refused(tmp_path, tiny_kimi, capsys):
    config = json.loads((tiny_kimi / "config.json").read_text())
    context = config["max_position_embeddings"]
    doc = _local_job(tmp_path, tiny_kimi, sampling={"maxNewTokens": context})
    path = write_job_yaml(tmp_path / "job.yaml", doc)
    assert main(["validate", "--local", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"maxNewTokens {context} reaches the model's context of {context}" in err


def test_two_jobs_in_one_file_are_refused_for_a_local_run(tmp_path, tiny_kimi, capsys):
    doc = _local_job(tmp_path, tiny_kimi)
    other = json.loads(json.dumps(doc))
    other["metadata"]["name"] = "second"
    path = tmp_path / "two.yaml"
    path.write_text(yaml.safe_dump_all([doc, other]))
    assert main(["validate", "--local", str(path)]) == 2
    assert "2 GenerationJobs (q, second)" in capsys.readouterr().err


def test_a_failed_tokenizer_check_ends_with_one_invalid_verdict(tmp_path, tiny_kimi, capsys):
    doc = _local_job(tmp_path, tiny_kimi)
    doc["spec"]["model"]["specialTokens"] = ["<not a single token at all>"]
    path = write_job_yaml(tmp_path / "job.yaml", doc)
    assert main(["validate", "--local", "--tokenizer", str(path)]) != 0
    out, err = capsys.readouterr()
    assert "is valid" not in out
    assert err.strip().splitlines()[-1].endswith("is invalid (local rules): the check above failed")
