"""A real `draftgen generate` (real CPU SGLang server) over a `save_to_disk` DatasetDict's split
and a hub-cache dataset's split with mapped columns: every row of the split chosen is a record,
none of the other split's, the record's source index is the row's place in that split."""

from __future__ import annotations

import datasets
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.faults.gen_run import Run, check_consistent, generate_args, write_job

from .test_hf_datasets import _hub_cache, _jsonl_bytes

pytestmark = pytest.mark.sglang


def test_generate_reads_a_saved_split_and_a_hub_cache_split(tmp_path, tiny_kimi, sglang_server):
    messages = [[{"role": "user", "content": f"Say hi {i}."}] for i in range(4)]
    datasets.DatasetDict(
        {
            "train": datasets.Dataset.from_dict({"messages": messages[:3]}),
            "test": datasets.Dataset.from_dict({"messages": messages[3:]}),
        }
    ).save_to_disk(str(tmp_path / "saved"))
    pq.write_table(pa.table({"question": ["Name a colour.", "Name a fruit."]}), tmp_path / "t.pq")
    cache = tmp_path / "hub"
    _hub_cache(
        cache,
        "org/questions",
        {
            "data/train-00000-of-00001.parquet": (tmp_path / "t.pq").read_bytes(),
            "data/test-00000-of-00001.jsonl": _jsonl_bytes([{"question": "Name a tree."}]),
        },
    )
    job = write_job(
        tmp_path,
        tiny_kimi,
        [
            {"name": "saved", "source": "saved", "split": "train", "format": "messages"},
            {
                "name": "hub",
                "source": "hf://datasets/org/questions",
                "split": "train",
                "format": "prompt",
                "columns": {"prompt": "question"},
            },
        ],
        sampling={"maxNewTokens": 4},
    )
    out = tmp_path / "out"
    run = Run(
        generate_args(job, sglang_server.url, out), tmp_path, env={"HF_HUB_CACHE": str(cache)}
    )
    code, log = run.finish()
    assert code == 0, log[-3000:]
    records = check_consistent(out, ["saved", "hub"])
    assert sorted(r["source_index"] for r in records["saved"]) == [0, 1, 2]
    assert sorted(r["source_index"] for r in records["hub"]) == [0, 1]
