"""iter_samples end to end with an offline Kimi-like tokenizer: ids, order, resume, rejects."""

from __future__ import annotations

import json

import pytest
from transformers import AutoTokenizer

from draftgen.generator.prompts.inputs import iter_samples, open_tokenizer
from draftgen.generator.prompts.samples import Reject, Sample
from tests.generator.gen_helpers import template_ids

from .conftest import make_job, write_jsonl
from .tokenizer_fixture import SPECIALS, THINK

GLAIVE_SYSTEM = (
    "SYSTEM: You are a helpful assistant with access to the following functions. "
    "Use them if required -\n"
    + json.dumps(
        {
            "name": "get_weather",
            "description": "Weather for a city",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
        indent=4,
    )
)
GLAIVE_CHAT = (
    'USER: Weather in Lagos?\n\n\nASSISTANT: <functioncall> {"name": "get_weather", '
    '"arguments": \'{"city": "Lagos"}\'} <|endoftext|>\n\n\nFUNCTION RESPONSE: '
    '{"t": 20}\n\n\nASSISTANT: It is 20 degrees. <|endoftext|>\n\n\nUSER: Tomorrow?\n\n\n'
)


def samples(items):
    return [i for i in items if isinstance(i, Sample)]


def rejects(items):
    return {i.source_index: i.reason for i in items if isinstance(i, Reject)}


def test_prompts_are_rendered_with_the_template_and_end_with_think(run_dataset, kimi_like_dir):
    items = run_dataset([{"prompt": "Hello", "system": "Be brief."}], "prompt")
    [s] = samples(items)
    tok = AutoTokenizer.from_pretrained(kimi_like_dir)
    expected = template_ids(
        tok, [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hello"}]
    )
    assert s.input_ids == expected
    assert s.input_ids[-1] == THINK and s.input_ids[0] == SPECIALS["<|im_system|>"]
    assert s.id.startswith("ds/") and s.id.endswith("/0") and s.turn == 0 and s.source_index == 0


def test_glaive_tools_are_declared_in_the_prompt_and_turns_all_gives_each_turn(
    run_dataset, kimi_like_dir
):
    items = run_dataset([{"system": GLAIVE_SYSTEM, "chat": GLAIVE_CHAT}], "glaive", turns="all")
    got = samples(items)
    assert [s.turn for s in got] == [0, 1, 2]
    tok = AutoTokenizer.from_pretrained(kimi_like_dir)
    for s in got:
        text = tok.decode(s.input_ids)
        assert text.startswith("<|im_system|>tool_declare<|im_middle|>") and "get_weather" in text
        assert s.input_ids[-1] == THINK and s.info["num_tools"] == 1
    # turn 2's prompt holds the given call and its response, consistent with each other
    last = tok.decode(got[2].input_ids)
    assert (
        '<|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>{"city": "Lagos"}'
        in last
    )
    assert '## Return of functions.get_weather:0\n{"t": 20}' in last
    assert "It is 20 degrees." in last and "<|endoftext|>" not in last


def test_turns_last_and_ids_stay_stable_across_runs(run_dataset):
    rows = [
        {
            "id": "c1",
            "messages": [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}],
        },
        {"messages": [{"role": "user", "content": "x"}]},
    ]
    first = samples(run_dataset(rows, "messages"))
    assert [s.id for s in first] == ["ds/c1/0", first[1].id]
    assert first[1].id.endswith("/0")
    again = samples(run_dataset(rows[::-1], "messages"))
    assert {s.id: s.input_ids for s in again} == {s.id: s.input_ids for s in first}


def test_skip_ids_resume_drops_done_samples_without_rendering_them(tmp_path, kimi_like_dir):
    write_jsonl(tmp_path / "d.jsonl", [{"id": f"r{i}", "prompt": f"p{i}"} for i in range(5)])
    job = make_job(kimi_like_dir, [{"name": "ds", "source": "d.jsonl", "format": "prompt"}])
    with open_tokenizer(job, tmp_path, workers=0) as ctx:
        rendered = []
        render_many = ctx.renderer.render_many
        ctx.renderer.render_many = lambda jobs: (
            rendered.extend(m for m, _ in jobs) or render_many(jobs)
        )
        items = list(
            iter_samples(
                job,
                job.spec.datasets[0],
                base_dir=tmp_path,
                tokenizer_ctx=ctx,
                skip_ids={"ds/r1/0", "ds/r3/0"},
            )
        )
    assert [s.id for s in samples(items)] == ["ds/r0/0", "ds/r2/0", "ds/r4/0"]
    assert [s.source_index for s in samples(items)] == [0, 2, 4]
    assert [m[-1]["content"] for m in rendered] == ["p0", "p2", "p4"]


def test_bad_rows_become_rejects_in_order_and_the_rest_go_on(run_dataset, tmp_path):
    rows = [
        {"messages": [{"role": "user", "content": "fine"}]},
        '{"messages": [',
        {"messages": []},
        {"messages": [{"role": "wizard", "content": "x"}]},
        {"messages": [{"role": "user", "content": 7}]},
        {"conversations": []},
        "[1, 2]",
        {"id": "x", "messages": [{"role": "user", "content": "one"}]},
        {"id": "x", "messages": [{"role": "user", "content": "another"}]},
        {"messages": [{"role": "user", "content": "also fine"}]},
    ]
    items = run_dataset(rows, "messages")
    assert rejects(items) == {
        1: "malformed_json",
        2: "empty_conversation",
        3: "unknown_role",
        4: "wrong_type",
        5: "missing_field",
        6: "wrong_type",
        8: "duplicate_id",
    }
    assert [s.source_index for s in samples(items)] == [0, 7, 9]
    assert [i.source_index for i in items] == list(range(10))  # selection order kept


def test_rows_repeated_verbatim_are_distinct_samples_with_stable_ids(run_dataset):
    row = {"messages": [{"role": "user", "content": "same"}]}
    other = {"messages": [{"role": "user", "content": "other"}]}
    ids = [s.id for s in samples(run_dataset([row, other, row, row], "messages"))]
    base = ids[0].removesuffix("/0")
    assert ids == [ids[0], ids[1], f"{base}~2/0", f"{base}~3/0"]
    reordered = [s.id for s in samples(run_dataset([row, row, other, row], "messages"))]
    assert sorted(reordered) == sorted(ids)


def test_invalid_utf8_row_is_a_reject(tmp_path, kimi_like_dir):
    (tmp_path / "d.jsonl").write_bytes(b'{"prompt": "ok"}\n{"prompt": "\xc3\x28"}\n')
    job = make_job(kimi_like_dir, [{"name": "ds", "source": "d.jsonl", "format": "prompt"}])
    with open_tokenizer(job, tmp_path, workers=0) as ctx:
        items = list(iter_samples(job, job.spec.datasets[0], base_dir=tmp_path, tokenizer_ctx=ctx))
    assert rejects(items) == {1: "invalid_utf8"} and len(samples(items)) == 1


def test_prompt_too_long_is_a_reject(run_dataset):
    items = run_dataset(
        [{"prompt": "short"}, {"prompt": "long " * 100}], "prompt", max_prompt_tokens=100
    )
    assert rejects(items) == {1: "prompt_too_long"}
    assert (
        "the server accepts at most 100" in next(i for i in items if isinstance(i, Reject)).detail
    )


def test_template_error_is_a_reject(tmp_path):
    from .tokenizer_fixture import NO_SYSTEM, build_tokenizer

    tok = build_tokenizer(tmp_path / "nosys", NO_SYSTEM)
    items_ok = []
    write_jsonl(tmp_path / "d.jsonl", [{"prompt": "a", "system": "s"}, {"prompt": "b"}])
    job = make_job(tok, [{"name": "ds", "source": "d.jsonl", "format": "prompt"}])
    with open_tokenizer(job, tmp_path, workers=0) as ctx:
        items_ok = list(
            iter_samples(job, job.spec.datasets[0], base_dir=tmp_path, tokenizer_ctx=ctx)
        )
    assert rejects(items_ok) == {0: "template_error"}
    assert "system messages are not supported" in items_ok[0].detail
    assert len(samples(items_ok)) == 1


def test_pretokenized_ids_are_sent_exactly_as_given(run_dataset):
    ids = [163587, 70_000, 65_536, 12, 163606]
    rows = [
        {"id": "a", "input_ids": ids},
        {"input_ids": [1, 200_000]},
        {"input_ids": []},
        {"input_ids": list(range(300))},
    ]
    items = run_dataset(rows, "pretokenized", max_prompt_tokens=256)
    [s] = samples(items)
    assert s.input_ids == ids and s.id == "ds/a/0"  # no template, no <think> appended
    assert rejects(items) == {1: "bad_token_id", 2: "empty_prompt", 3: "prompt_too_long"}


def test_shuffle_takes_the_same_subset_every_run(run_dataset):
    rows = [{"prompt": f"p{i}"} for i in range(40)]
    a = [
        s.source_index
        for s in samples(run_dataset(rows, "prompt", selection={"mode": "shuffle", "seed": 5}))
    ]
    b = [
        s.source_index
        for s in samples(run_dataset(rows, "prompt", selection={"mode": "shuffle", "seed": 5}))
    ]
    assert a == b and sorted(a) == list(range(40)) and a != list(range(40))


def test_worker_pool_gives_the_same_items_in_the_same_order_and_streams(
    run_dataset, tmp_path, kimi_like_dir
):
    from draftgen.generator.prompts.pretokenize import BATCH_PROMPTS, RenderJob

    rows = [{"prompt": f"question {i} " * (i % 7 + 1)} for i in range(60)] + ["{broken"]
    inline = run_dataset(rows, "prompt", workers=0)
    job = make_job(kimi_like_dir, [{"name": "ds", "source": "data.jsonl", "format": "prompt"}])
    with open_tokenizer(job, tmp_path, workers=2) as ctx:
        pooled = list(iter_samples(job, job.spec.datasets[0], base_dir=tmp_path, tokenizer_ctx=ctx))
        assert pooled == inline and len(samples(pooled)) == 60

        # datasets are read by one thread each, sharing the pool: each stream keeps its order
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(3) as threads:
            runs = [
                threads.submit(
                    lambda: list(
                        iter_samples(
                            job, job.spec.datasets[0], base_dir=tmp_path, tokenizer_ctx=ctx
                        )
                    )
                )
                for _ in range(3)
            ]
            assert all(r.result() == inline for r in runs)

        pulled = 0

        def endless():  # an endless source: only a bounded window may be read ahead
            nonlocal pulled
            while True:
                pulled += 1
                yield RenderJob([{"role": "user", "content": f"q{pulled}"}], None, pulled)

        stream = ctx.render_stream(endless())
        first = [next(stream) for _ in range(5)]
        assert [u.meta for u, _ in first] == [1, 2, 3, 4, 5] and all(r.ids for _, r in first)
        assert pulled <= (ctx.prefetch + 1) * BATCH_PROMPTS
        stream.close()


def test_hub_ids_resolve_and_fail_clearly_offline(tmp_path, monkeypatch):
    from draftgen.generator.prompts.pretokenize import TokenizerError, resolve_tokenizer_location

    assert (
        resolve_tokenizer_location("hf://moonshotai/Kimi-K2.5", tmp_path) == "moonshotai/Kimi-K2.5"
    )
    assert resolve_tokenizer_location("../m", tmp_path / "jobs") == str(tmp_path / "jobs" / "../m")
    assert resolve_tokenizer_location("/abs/m", tmp_path) == "/abs/m"
    import huggingface_hub.constants

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # no downloads at test time
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    job = make_job(
        "hf://draftgen-test/does-not-exist",
        [{"name": "ds", "source": "d.jsonl", "format": "prompt"}],
    )
    with pytest.raises(TokenizerError, match="draftgen-test/does-not-exist.*hub id"):
        open_tokenizer(job, tmp_path, workers=0)


def test_a_directory_of_parquet_and_jsonl_files_reads_like_one_jsonl(tmp_path, kimi_like_dir):
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = [
        {
            "messages": [
                {"role": "user", "content": "weather?"},
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "c0",
                            "type": "function",
                            "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'},
                        }
                    ],
                },
                {"role": "tool", "content": '{"t": 1}', "tool_call_id": "c0"},
            ],
            "tools": [
                {
                    "type": "function",
                    "function": {
                        "name": "get_weather",
                        "description": "w",
                        "parameters": {"type": "object"},
                    },
                }
            ],
        },
        {"messages": [{"role": "user", "content": "plain"}]},
    ]
    (tmp_path / "dir").mkdir()
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "dir" / "a.parquet")
    write_jsonl(
        tmp_path / "dir" / "b.jsonl", [{"messages": [{"role": "user", "content": "third"}]}]
    )
    write_jsonl(
        tmp_path / "flat.jsonl", rows + [{"messages": [{"role": "user", "content": "third"}]}]
    )
    out = {}
    for source in ("dir", "flat.jsonl"):
        job = make_job(kimi_like_dir, [{"name": "ds", "source": source, "format": "messages"}])
        with open_tokenizer(job, tmp_path, workers=0) as ctx:
            out[source] = list(
                iter_samples(job, job.spec.datasets[0], base_dir=tmp_path, tokenizer_ctx=ctx)
            )
    assert out["dir"] == out["flat.jsonl"] and len(samples(out["dir"])) == 3
    assert samples(out["dir"])[0].info["num_tools"] == 1
