"""`draftgen plan --job examples/kimi-k2.5.yaml` and the figures the operator writes to status."""

from __future__ import annotations

import json

import pytest

from draftgen.cli import main
from draftgen.plan import plan_status
from draftgen.plan.planner import PlanInputs, build_plan
from draftgen.spec import load_job
from tests.jobs import dataset, job_document, write_job_yaml

from .conftest import KIMI_START_LOG, LLAMA_8B


def _plan(capsys, *args):
    code = main(["plan", *args])
    out, err = capsys.readouterr()
    return code, out, err


def _plan_kimi(capsys, examples, *args, **flags):
    """`draftgen plan --job examples/kimi-k2.5.yaml ARGS`, then each flag as `--name value`
    (`mean_prompt_tokens=1000`: `--mean-prompt-tokens 1000`)."""
    words = [w for k, v in flags.items() for w in ("--" + k.replace("_", "-"), str(v))]
    return _plan(capsys, "--job", str(examples / "kimi-k2.5.yaml"), *args, *words)


def test_kimi_report_a_person_can_act_on(capsys, examples):
    code, out, err = _plan_kimi(capsys, examples)
    assert code == 0, err
    assert "21.71 − 94.04 × (1 − 0.88) = 10.43 GiB → 159,29" in out  # capacity
    assert "116,1" in out  # 0.85 row
    assert "decodes that fit: 159,29" in out  # concurrency
    assert "× 17 tok/s" in out and "throughput ceiling" in out
    assert "48 GB per rank × 8 ranks = 384 GB ≤ 449 GB host" in out  # host memory
    assert "largest safe size: 49 GB per rank" in out
    assert "for prefill activations" in out  # headroom
    assert "THIN" in out  # 0.93 row
    assert "100,000,000 tokens" in out and "h" in out.split("total")[-1]  # ETA
    assert "Missing" not in out
    # SGLang's own admission, from server.scheduleConservativeness (unset with auto
    # concurrency: 0.1, so 0.07 → 0.0098)
    assert "scheduleConservativeness 0.1 → " in out and "0.07 (decaying to 0.0098)" in out


def test_report_shows_the_server_lever(capsys, tmp_path, examples):
    import yaml

    doc = yaml.safe_load((examples / "kimi-k2.5.yaml").read_text())
    doc["spec"]["server"]["scheduleConservativeness"] = 1.0
    job = tmp_path / "job.yaml"
    job.write_text(yaml.safe_dump(doc))
    code, out, err = _plan(capsys, "--job", str(job))
    assert code == 0, err
    assert "scheduleConservativeness 1 → " in out and "0.7 (decaying to 0.098)" in out
    code, out, _ = _plan(capsys, "--job", str(job), "--json")
    assert json.loads(out)["schedule_conservativeness"] == 1.0


def test_kimi_json_has_the_figures(capsys, examples):
    code, out, _ = _plan_kimi(capsys, examples, "--json", "--measured-throughput", "930")
    assert code == 0
    data = json.loads(out)
    assert abs(data["capacity"]["tokens"] - 159_277) / 159_277 < 0.005
    assert data["cell_bytes"] == 70_272
    assert data["host_memory"]["ok"] and data["host_memory"]["total_gb"] == 384
    assert not data["headroom"]["thin"]
    assert data["eta"]["basis"] == "measured"
    assert data["eta"]["total_seconds"] == pytest.approx(100_000_000 / 930)
    assert data["eta"]["total"] == "29h52m"


def test_other_fraction_and_fp8_from_the_command_line(capsys, examples):
    code, out, _ = _plan_kimi(capsys, examples, "--json", "--mem-fraction-static", "0.85")
    assert abs(json.loads(out)["capacity"]["tokens"] - 116_171) / 116_171 < 0.005
    code, out, _ = _plan_kimi(capsys, examples, "--json", "--kv-cache-dtype", "fp8_e4m3")
    assert 1.95 < json.loads(out)["capacity"]["tokens"] / 159_277 < 2.05


def test_from_log_checks_the_rule_against_the_logged_start(capsys, examples, tmp_path):
    log = tmp_path / "server.log"
    log.write_text(KIMI_START_LOG)
    code, out, err = _plan_kimi(capsys, examples, "--from-log", str(log))
    assert code == 0, err
    assert "the logged start had max_total_num_tokens 159,277 at 0.88" in out
    assert "(0.01% off)" in out
    assert "CUDA graphs (measured)" in out


def test_measured_throughput_at_the_bound_is_explained(capsys, examples):
    code, out, _ = _plan_kimi(
        capsys,
        examples,
        mean_prompt_tokens=1000,
        mean_completion_tokens=3000,
        measured_throughput=680,
    )
    assert "decodes that fit: 159,294 / 4,000 = 39" in out
    assert "39 × 17 tok/s = 663 completion tok/s" in out
    assert "the server runs every decode that fits" in out


def test_measured_figures_on_the_command_line(capsys, examples):
    code, out, _ = _plan_kimi(
        capsys, examples, "--json", free_before_load_gib=94.04, free_after_load_gib=23.71
    )
    assert json.loads(out)["memory"]["free_after_load_gib"] == 23.71
    code, _, err = _plan_kimi(capsys, examples, "--free-before-load-gib", "94.04")
    assert code == 2 and "--free-after-load-gib" in err


def test_unknown_config_lists_what_is_missing(capsys, tmp_path, examples):
    job = tmp_path / "job.yaml"
    job.write_text(
        (examples / "kimi-k2.5.yaml")
        .read_text()
        .replace("configPath: models/kimi-k2.5/config.json", "configPath: nope.json")
    )
    code, out, _ = _plan(capsys, "--job", str(job))
    assert code == 0
    assert "Missing" in out and "nope.json" in out and "--model-config" in out
    # Host memory does not need the model and is still checked.
    assert "384 GB ≤ 449 GB host" in out


def test_estimate_from_gpu_memory_for_a_gqa_model(capsys, tmp_path):
    (tmp_path / "weights").mkdir()
    (tmp_path / "weights" / "config.json").write_text(json.dumps(LLAMA_8B))
    (tmp_path / "weights" / "model.safetensors.index.json").write_text(
        json.dumps({"metadata": {"total_size": 16_060_522_496}})
    )
    write_job_yaml(
        tmp_path / "job.yaml",
        job_document(
            "llama",
            model={"weights": "weights"},
            server={"tensorParallelSize": 1},
            datasets=[
                dataset(
                    "chat",
                    "c.jsonl",
                    "messages",
                    budget={"maxSamples": 1000},
                    expected={"promptTokens": 500, "completionTokens": 1500},
                )
            ],
        ),
    )
    code, out, err = _plan(
        capsys,
        "--job",
        str(tmp_path / "job.yaml"),
        "--gpu-memory-gib",
        "79.2",
        "--decode-tokens-per-second",
        "40",
        "--json",
    )
    assert code == 0, err
    data = json.loads(out)
    assert data["memory"]["source"] == "estimated"
    assert data["cell_bytes"] == 131_072
    assert data["decodes"] == data["capacity"]["tokens"] // 2_000
    assert data["eta"]["total_tokens"] == 1_500_000


def test_plan_status_for_the_operator(examples):
    job = load_job(examples / "kimi-k2.5.yaml")
    before = plan_status(job, PlanInputs(base_dir=examples))
    assert abs(before.kv_capacity_tokens - 159_277) / 159_277 < 0.005
    assert before.concurrent_decodes and before.throughput_ceiling_tokens_per_second
    assert before.eta_seconds == pytest.approx(
        100_000_000 / before.throughput_ceiling_tokens_per_second
    )
    # During the run: the server's own capacity, the measured rate and the tokens already done.
    during = plan_status(
        job,
        base_dir=examples,
        observed_kv_capacity_tokens=159_277,
        measured_throughput=930.0,
        done_completion_tokens={"b-chat": 10_000_000, "b-coding": 4_000_000},
    )
    assert during.kv_capacity_tokens == 159_277
    assert during.eta_seconds == pytest.approx(86_000_000 / 930)


def test_plan_status_never_raises_without_a_config(examples):
    job = load_job(examples / "kimi-k2.5.yaml")
    job.spec.model.config_path = None  # weights on a volume the operator cannot read
    status = plan_status(job, PlanInputs(base_dir=examples))
    assert status.kv_capacity_tokens is None and status.eta_seconds is None
    live = plan_status(job, PlanInputs(observed_kv_capacity_tokens=159_277))
    assert (
        live.concurrent_decodes
        == build_plan(job, PlanInputs(observed_kv_capacity_tokens=159_277)).decodes
    )
    assert live.concurrent_decodes and live.eta_seconds
