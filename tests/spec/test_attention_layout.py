"""`server.attentionDataParallelSize` and `server.decodeContextParallelSize`: each must divide
the GPUs it splits (SGLang 0.5.23 asserts it at start, after the GPUs are booked), the older
`--enable-dp-attention` spelling and `--dp-size` beside DP attention are refused in extraArgs,
and the error names the field and the sizes that would work."""

from __future__ import annotations

import copy

import pytest

from draftgen.spec import SpecError, parse_job
from tests.jobs import job_document

BASE = job_document(
    "job",
    model={"weights": "/models/m"},
    datasets=[{"name": "chat", "source": "chat.jsonl", "format": "messages"}],
)


def server(**fields: object) -> dict:
    doc = copy.deepcopy(BASE)
    doc["spec"]["server"] = fields
    return doc


def problems(**fields: object) -> str:
    with pytest.raises(SpecError) as err:
        parse_job(server(**fields))
    return "\n".join(err.value.problems)


@pytest.mark.parametrize("d", [1, 2, 4, 8])
def test_each_divisor_of_tp_is_a_layout(d: int) -> None:
    job = parse_job(server(tensorParallelSize=8, attentionDataParallelSize=d))
    assert job.spec.server.attention_data_parallel_size == d
    assert job.spec.server.attention_tp_size == 8 // d


def test_defaults_are_plain_tensor_parallelism() -> None:
    s = parse_job(server()).spec.server
    assert (s.attention_data_parallel_size, s.decode_context_parallel_size) == (1, 1)


def test_a_size_that_does_not_divide_tp_names_the_field_and_the_sizes_that_do() -> None:
    text = problems(tensorParallelSize=8, attentionDataParallelSize=3)
    assert "attentionDataParallelSize: 3 does not divide tensorParallelSize 8" in text
    assert "[1, 2, 4, 8]" in text


def test_dcp_must_fit_one_attention_group() -> None:
    # 8 GPUs in 4 attention groups of 2: a DCP group of 4 would span two groups.
    text = problems(tensorParallelSize=8, attentionDataParallelSize=4, decodeContextParallelSize=4)
    assert "decodeContextParallelSize: 4 does not divide the 2 GPUs of an attention group" in text
    assert "[1, 2]" in text
    ok = parse_job(
        server(tensorParallelSize=8, attentionDataParallelSize=2, decodeContextParallelSize=4)
    )
    assert ok.spec.server.decode_context_parallel_size == 4


def test_dcp_alone_must_divide_tp() -> None:
    assert "decodeContextParallelSize: 3" in problems(
        tensorParallelSize=8, decodeContextParallelSize=3
    )


@pytest.mark.parametrize(
    ("arg", "field"),
    [
        ("--attn-dp-size", "attentionDataParallelSize"),
        ("--attention-data-parallel-size", "attentionDataParallelSize"),
        ("--dcp-size", "decodeContextParallelSize"),
        ("--decode-context-parallel-size", "decodeContextParallelSize"),
        ("--enable-dp-attention", "attentionDataParallelSize"),
    ],
)
def test_extra_args_cannot_set_the_layout(arg: str, field: str) -> None:
    text = problems(extraArgs=[arg, "2"])
    assert f"spec.server.{field}" in text


def test_plain_dp_beside_dp_attention_is_refused() -> None:
    text = problems(attentionDataParallelSize=2, extraArgs=["--dp-size", "2"])
    assert "does not combine data-parallel replicas with attention data parallelism" in text
    # Alone it stays SGLang's plain data parallelism (the CPU test servers use it).
    assert parse_job(server(extraArgs=["--dp-size", "2"])).spec.server.extra_args == [
        "--dp-size",
        "2",
    ]
