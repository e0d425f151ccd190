"""`draftgen stats`: every record shape counted, never a silent zero."""

from __future__ import annotations

import json

from draftgen.cli import main

from .gen_helpers import write_jsonl


def _native(i, completion, finish="stop"):
    return {
        "id": f"a/{i}/0",
        "dataset": "a",
        "source_index": i,
        "turn": 0,
        "input_ids": [1] * 10,
        "output_ids": [163607] * completion,
        "prompt_tokens": 10,
        "completion_tokens": completion,
        "finish_reason": finish,
        "matched_stop": None,
        "meta": {},
    }


def _openai(completion, finish="stop"):
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": "kimi",
        "choices": [
            {"index": 0, "finish_reason": finish, "message": {"role": "assistant", "content": "x"}}
        ],
        "usage": {
            "prompt_tokens": 20,
            "completion_tokens": completion,
            "total_tokens": 20 + completion,
        },
    }


def test_stats_counts_draftgen_and_openai_records(tmp_path, capsys):
    write_jsonl(tmp_path / "a" / "shard-00000.jsonl", [_native(0, 30), _native(1, 50, "length")])
    write_jsonl(
        tmp_path / "a" / "rejects.jsonl",
        [
            {"source_index": 5, "id": None, "reason": "malformed_json"},
            {"source_index": 5, "id": None, "reason": "malformed_json"},  # repeated by a resume
            {"source_index": 1, "id": "a/1/0", "reason": "request_failed"},
        ],
    )  # done on a later run
    # Older data: OpenAI responses, plain and inside a batch-output `response.body`.
    write_jsonl(
        tmp_path / "old" / "data.jsonl",
        [
            _openai(100),
            {"custom_id": "r2", "response": {"status_code": 200, "body": _openai(60, "length")}},
        ],
    )
    assert main(["stats", str(tmp_path), "--json"]) == 0
    got = {d["dataset"]: d for d in json.loads(capsys.readouterr().out)["datasets"]}
    assert got["a"]["samples"] == 2 and got["a"]["completion_tokens"] == 80
    assert got["a"]["prompt_tokens"] == 20 and got["a"]["truncation_rate"] == 0.5
    assert got["a"]["rejects"] == 1 and got["a"]["mean_completion_tokens"] == 40
    assert got["old"]["samples"] == 2 and got["old"]["completion_tokens"] == 160
    assert got["old"]["prompt_tokens"] == 40 and got["old"]["truncation_rate"] == 0.5


def test_a_file_without_token_counts_is_a_loud_failure(tmp_path, capsys):
    write_jsonl(tmp_path / "x" / "shard-00000.jsonl", [{"text": "an answer"}, {"text": "another"}])
    assert main(["stats", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "WARNING" in err and "0 completion tokens" in err and "shard-00000.jsonl" in err


def test_stats_table_on_a_real_shape(tmp_path, capsys):
    write_jsonl(tmp_path / "a" / "shard-00000.jsonl", [_native(0, 7)])
    assert main(["stats", str(tmp_path / "a")]) == 0
    out = capsys.readouterr().out
    assert "a " in out and "7" in out


def test_stats_splits_a_dataset_by_the_servers_data_parallel_rank(tmp_path, capsys):
    """Records from a server with several KV pools carry `meta.dp_rank`: stats shows what each
    rank made (a rank that made nothing while another did the work shows here)."""
    ranked = []
    for i, (rank, completion) in enumerate([(0, 30), (1, 50), (1, 20)]):
        rec = _native(i, completion)
        rec["meta"] = {"dp_rank": rank}
        ranked.append(rec)
    write_jsonl(tmp_path / "a" / "shard-00000.jsonl", [*ranked, _native(3, 7)])
    assert main(["stats", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "by data-parallel rank" in out
    assert "a: rank 0 1 samples 30 completion tok, rank 1 2 samples 70 completion tok" in out
    assert main(["stats", "--json", str(tmp_path)]) == 0
    [ds] = json.loads(capsys.readouterr().out)["datasets"]
    assert ds["by_rank"] == {
        "0": {"samples": 1, "prompt_tokens": 10, "completion_tokens": 30},
        "1": {"samples": 2, "prompt_tokens": 20, "completion_tokens": 70},
    }
    assert ds["samples"] == 4  # the record without a rank still counts for the dataset


def test_stats_of_a_single_pool_server_has_no_rank_section(tmp_path, capsys):
    write_jsonl(tmp_path / "a" / "shard-00000.jsonl", [_native(0, 30)])
    assert main(["stats", str(tmp_path)]) == 0
    assert "rank" not in capsys.readouterr().out
    assert main(["stats", "--json", str(tmp_path)]) == 0
    assert json.loads(capsys.readouterr().out)["datasets"][0]["by_rank"] == {}
