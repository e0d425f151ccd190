"""Class 10 of issue 21: a tensorParallelSize that does not divide the model's attention heads is
refused when the config is known, and memory measured at another tensor-parallel size is
re-derived for the job's instead of reused as is."""

from __future__ import annotations

import pytest

from draftgen.plan.kvcache import MemoryInputError, parse_start_log
from draftgen.plan.modelconfig import ModelConfigError
from draftgen.plan.planner import PlanInputs, build_plan
from draftgen.spec import parse_job
from tests.jobs import job_document

from .conftest import FREE_AFTER_GIB, FREE_BEFORE_GIB, KIMI_START_LOG


def _job(tp: int, **planning: object):
    return parse_job(
        job_document(
            "kimi",
            model={"weights": "/models/Kimi-K2.5"},
            server={"tensorParallelSize": tp},
            planning={"gpuMemoryGiB": 96.0, **planning},
            datasets=[{"name": "chat", "source": "c.jsonl", "format": "messages"}],
        )
    )


@pytest.mark.parametrize("tp", [3, 5, 6])
def test_a_tp_that_does_not_divide_the_heads_is_refused(tp, kimi_config):
    with pytest.raises(ModelConfigError) as err:
        build_plan(_job(tp), PlanInputs(model_config=kimi_config))
    message = str(err.value)
    assert message.startswith(f"spec.server.tensorParallelSize: {tp} does not divide")
    assert "64 attention heads" in message and "[1, 2, 4, 8, 16, 32, 64]" in message


def test_a_dividing_tp_plans(kimi_config):
    assert build_plan(_job(4), PlanInputs(model_config=kimi_config)).tensor_parallel_size == 4


def test_memory_measured_at_tp8_is_re_derived_for_tp4_not_reused(kimi_config):
    loaded = FREE_BEFORE_GIB - FREE_AFTER_GIB  # one rank's shard at tp 8
    measured = {
        "freeBeforeLoadGiB": FREE_BEFORE_GIB,
        "freeAfterLoadGiB": FREE_AFTER_GIB,
        "tensorParallelSize": 8,
    }
    # At tp 4 each rank holds twice the shard: Kimi's 72 GiB per rank does not fit in 94.
    with pytest.raises(MemoryInputError, match="do not fit at tensorParallelSize 4"):
        build_plan(_job(4, measured=measured), PlanInputs(model_config=kimi_config))
    # At tp 16 it holds half.
    plan = build_plan(_job(16, measured=measured), PlanInputs(model_config=kimi_config))
    assert plan.memory is not None
    assert plan.memory.free_after_load_gib == pytest.approx(FREE_BEFORE_GIB - loaded / 2)
    assert "re-derived from tp 8 for tp 16" in plan.memory.detail


def test_a_start_log_of_another_tp_is_re_derived(kimi_config):
    log = parse_start_log(KIMI_START_LOG)  # tp_size=8
    plan = build_plan(_job(16), PlanInputs(model_config=kimi_config, start_log=log))
    assert plan.memory is not None
    assert plan.memory.free_after_load_gib == pytest.approx(
        log.free_before_load_gib - (log.free_before_load_gib - log.free_after_load_gib) / 2
    )
    assert any("re-derived" in w for w in plan.warnings)


def test_validate_refuses_the_tp_when_the_config_is_readable(tmp_path, examples, capsys):
    import shutil

    from draftgen.cli import main
    from tests.jobs import write_job_yaml

    (tmp_path / "m").mkdir()
    shutil.copy(examples / "models" / "kimi-k2.5" / "config.json", tmp_path / "m")
    doc = job_document(
        "kimi",
        model={"weights": "m"},
        server={"tensorParallelSize": 3},
        datasets=[{"name": "chat", "source": "c.jsonl", "format": "messages"}],
    )
    assert (
        main(
            [
                "validate",
                "--local",
                "--serve",
                "--spec-only",
                str(write_job_yaml(tmp_path / "job.yaml", doc)),
            ]
        )
        == 2
    )
    err = capsys.readouterr().err
    assert "spec.server.tensorParallelSize: 3 does not divide the model's 64 attention heads" in err
    doc["spec"]["server"]["tensorParallelSize"] = 8
    assert (
        main(
            [
                "validate",
                "--local",
                "--serve",
                "--spec-only",
                str(write_job_yaml(tmp_path / "job.yaml", doc)),
            ]
        )
        == 0
    )


def test_validate_without_a_readable_config_does_not_refuse(tmp_path):
    from draftgen.cli import main
    from tests.jobs import write_job_yaml

    (tmp_path / "m").mkdir()  # weights without config.json
    doc = job_document(
        "kimi",
        model={"weights": "m"},
        server={"tensorParallelSize": 3},
        datasets=[{"name": "chat", "source": "c.jsonl", "format": "messages"}],
    )
    assert (
        main(
            [
                "validate",
                "--local",
                "--serve",
                "--spec-only",
                str(write_job_yaml(tmp_path / "job.yaml", doc)),
            ]
        )
        == 0
    )
