"""Hugging Face datasets read offline: a directory `datasets`' own `save_to_disk` wrote (Arrow IPC
*stream* files, one Dataset or a DatasetDict of splits) and a dataset in a local hub cache
(`hf://datasets/ORG/NAME`, a cache laid out as `huggingface_hub` reads it: checked with its own
`try_to_load_from_cache`), with a split and the `columns` mapping; the split rules agree with
`datasets`' own; a missing split or dataset is an error naming the field and the fix."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import datasets
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from huggingface_hub import try_to_load_from_cache

from draftgen.generator.prompts.inputs import _plan, dataset_files
from draftgen.generator.prompts.pretokenize import RenderJob
from draftgen.generator.rows.hf import split_files
from draftgen.generator.rows.sources import SourceError, list_files
from draftgen.spec import SpecError, parse_job
from draftgen.spec.datasets import DatasetSpec
from tests.jobs import dataset, job_document

COMMIT = "0123456789abcdef0123456789abcdef01234567"


def _conversations(prefix: str, n: int) -> dict[str, list]:
    return {
        "id": [f"{prefix}{i}" for i in range(n)],
        "conversations": [[{"from": "human", "value": f"{prefix} question {i}"}] for i in range(n)],
    }


def _questions(ds: DatasetSpec, base: Path) -> list[str]:
    """The user turns the dataset's rows become, in reading order (no tokenizer needed)."""
    jobs = [j for j in _plan(ds, base, None, (), None) if isinstance(j, RenderJob)]
    return [m["content"] for j in jobs for m in j.messages if m["role"] == "user"]


def _sharegpt(source: str, **fields) -> DatasetSpec:
    return DatasetSpec(name="d", source=source, format="sharegpt", **fields)


def test_save_to_disk_writes_arrow_stream_files_and_they_are_read_in_state_json_order(tmp_path):
    datasets.Dataset.from_dict(_conversations("q", 7)).save_to_disk(
        str(tmp_path / "saved"), num_shards=3
    )
    arrows = sorted((tmp_path / "saved").glob("data-*.arrow"))
    assert len(arrows) == 3
    # The IPC stream format: a continuation marker, not the file format's ARROW1 magic.
    assert all(f.read_bytes()[:4] == b"\xff\xff\xff\xff" for f in arrows)
    assert _questions(_sharegpt("saved"), tmp_path) == [f"q question {i}" for i in range(7)]


@pytest.mark.parametrize("mode", ["sequential", "shuffle"])
def test_a_saved_datasetdict_is_read_by_its_split(tmp_path, mode):
    datasets.DatasetDict(
        {
            "train": datasets.Dataset.from_dict(_conversations("train", 5)),
            "test": datasets.Dataset.from_dict(_conversations("test", 2)),
        }
    ).save_to_disk(str(tmp_path / "dd"))
    ds = _sharegpt("dd", split="test", selection={"mode": mode, "seed": 1})
    assert sorted(_questions(ds, tmp_path)) == ["test question 0", "test question 1"]
    train = _sharegpt("dd", split="train", selection={"mode": mode, "seed": 1})
    assert sorted(_questions(train, tmp_path)) == [f"train question {i}" for i in range(5)]


def test_a_saved_datasetdict_without_split_or_with_a_wrong_one_names_the_splits(tmp_path):
    datasets.DatasetDict(
        {
            "train": datasets.Dataset.from_dict(_conversations("a", 1)),
            "test": datasets.Dataset.from_dict(_conversations("b", 1)),
        }
    ).save_to_disk(str(tmp_path / "dd"))
    with pytest.raises(SourceError, match="holds the splits train, test; choose one") as err:
        dataset_files(_sharegpt("dd"), tmp_path)
    assert err.value.field == "split"
    with pytest.raises(SourceError, match="'tset' is not a split .* its splits are train, test"):
        dataset_files(_sharegpt("dd", split="tset"), tmp_path)


def test_a_saved_dataset_with_its_columns_mapped(tmp_path):
    datasets.Dataset.from_dict(
        {"question": ["What is 2+2?", "Name a colour."], "instruction": ["Be brief.", "One word."]}
    ).save_to_disk(str(tmp_path / "qs"))
    ds = DatasetSpec(
        name="p",
        source="qs",
        format="prompt",
        columns={"prompt": "question", "system": "instruction"},
    )
    jobs = [j for j in _plan(ds, tmp_path, None, (), None) if isinstance(j, RenderJob)]
    assert [[m["content"] for m in j.messages] for j in jobs] == [
        ["Be brief.", "What is 2+2?"],
        ["One word.", "Name a colour."],
    ]


def test_a_saved_single_dataset_refuses_a_split_it_is_not(tmp_path):
    full = datasets.Dataset.from_dict(_conversations("q", 2))
    full.save_to_disk(str(tmp_path / "one"))
    with pytest.raises(
        SourceError, match="one saved Dataset .* not a DatasetDict; leave out split"
    ):
        dataset_files(_sharegpt("one", split="train"), tmp_path)
    assert len(dataset_files(_sharegpt("one"), tmp_path)) == 1


def test_an_arrow_file_in_the_ipc_file_format_reads_too(tmp_path):
    table = pa.Table.from_pydict({"prompt": ["a", "b"]})
    with pa.ipc.new_file(tmp_path / "x.arrow", table.schema) as writer:
        writer.write_table(table)
    ds = DatasetSpec(name="p", source="x.arrow", format="prompt")
    jobs = [j for j in _plan(ds, tmp_path, None, (), None) if isinstance(j, RenderJob)]
    assert [j.messages[-1]["content"] for j in jobs] == ["a", "b"]


def test_a_damaged_arrow_file_is_a_source_error_naming_it(tmp_path):
    datasets.Dataset.from_dict(_conversations("q", 3)).save_to_disk(str(tmp_path / "s"))
    (arrow,) = (tmp_path / "s").glob("*.arrow")
    arrow.write_bytes(arrow.read_bytes()[:40])
    with pytest.raises(SourceError, match=r"not a readable Arrow IPC file .* save the dataset"):
        _questions(_sharegpt("s"), tmp_path)


# --- the local hub cache --------------------------------------------------------------------


def _hub_cache(cache: Path, repo_id: str, files: dict[str, bytes]) -> Path:
    """A hub cache holding `repo_id` at COMMIT (refs/main), laid out as `huggingface_hub` writes
    it: content-addressed blobs, the snapshot's files relative symlinks to them."""
    repo = cache / ("datasets--" + repo_id.replace("/", "--"))
    snapshot = repo / "snapshots" / COMMIT
    for rel, data in files.items():
        blob = repo / "blobs" / hashlib.sha256(data).hexdigest()
        blob.parent.mkdir(parents=True, exist_ok=True)
        blob.write_bytes(data)
        link = snapshot / rel
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(os.path.relpath(blob, link.parent))
    (repo / "refs").mkdir(parents=True, exist_ok=True)
    (repo / "refs" / "main").write_text(COMMIT)
    return repo


def _parquet_bytes(tmp_path: Path, rows: dict[str, list]) -> bytes:
    pq.write_table(pa.Table.from_pydict(rows), tmp_path / "t.parquet")
    return (tmp_path / "t.parquet").read_bytes()


def _jsonl_bytes(rows: list[dict]) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


@pytest.fixture
def hub(tmp_path, monkeypatch) -> Path:
    """A hub cache in HF_HUB_CACHE holding `org/chat`: a train split in Parquet shards and a test
    split in JSONL, named as `push_to_hub` names them, and a README."""
    cache = tmp_path / "hub"
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    train = _parquet_bytes(tmp_path, {"question": ["t0", "t1", "t2"]})
    _hub_cache(
        cache,
        "org/chat",
        {
            "README.md": b"---\nlicense: mit\n---\n",
            "data/train-00000-of-00001.parquet": train,
            "data/test-00000-of-00001.jsonl": _jsonl_bytes([{"question": "e0"}]),
        },
    )
    return cache


def test_the_fixture_cache_is_one_huggingface_hub_reads(hub):
    found = try_to_load_from_cache(
        "org/chat", "data/test-00000-of-00001.jsonl", cache_dir=hub, repo_type="dataset"
    )
    assert isinstance(found, str) and Path(found).read_bytes().startswith(b'{"question"')


def _prompts(source: str, base: Path, **fields) -> list[str]:
    ds = DatasetSpec(
        name="p", source=source, format="prompt", columns={"prompt": "question"}, **fields
    )
    jobs = [j for j in _plan(ds, base, None, (), None) if isinstance(j, RenderJob)]
    return [j.messages[-1]["content"] for j in jobs]


def test_a_hub_dataset_in_the_local_cache_is_read_by_split_with_columns_mapped(hub, tmp_path):
    assert _prompts("hf://datasets/org/chat", tmp_path, split="train") == ["t0", "t1", "t2"]
    assert _prompts("hf://datasets/org/chat", tmp_path, split="test") == ["e0"]
    assert _prompts(f"hf://datasets/org/chat@{COMMIT}/data", tmp_path, split="test") == ["e0"]


def test_a_hub_dataset_of_several_splits_needs_one_named(hub, tmp_path):
    with pytest.raises(SourceError, match="holds the splits train, test; choose one") as err:
        _prompts("hf://datasets/org/chat", tmp_path)
    assert err.value.field == "split"
    with pytest.raises(SourceError, match="'validation' is not a split .* train, test"):
        _prompts("hf://datasets/org/chat", tmp_path, split="validation")


def test_a_hub_dataset_not_in_the_cache_names_the_cache_and_the_download(hub, tmp_path):
    with pytest.raises(SourceError) as err:
        _prompts("hf://datasets/org/absent", tmp_path)
    text = str(err.value)
    assert f"org/absent is not in the local hub cache {hub} (from $HF_HUB_CACHE)" in text
    assert "hf download org/absent --repo-type dataset" in text and "never downloads" in text
    assert err.value.field == "source"
    with pytest.raises(SourceError, match="revision v2 of org/chat .* refs main"):
        _prompts("hf://datasets/org/chat@v2", tmp_path, split="train")


def test_hf_home_places_the_cache_when_hf_hub_cache_is_unset(tmp_path, monkeypatch):
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    monkeypatch.delenv("HUGGINGFACE_HUB_CACHE", raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "home"))
    _hub_cache(
        tmp_path / "home" / "hub", "org/one", {"train.jsonl": _jsonl_bytes([{"question": "x"}])}
    )
    assert _prompts("hf://datasets/org/one", tmp_path) == ["x"]


def test_split_on_a_single_file_is_refused_and_a_plain_directory_splits_by_name(tmp_path):
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "train.jsonl").write_bytes(_jsonl_bytes([{"question": "a"}]))
    (tmp_path / "d" / "test.jsonl").write_bytes(_jsonl_bytes([{"question": "b"}]))
    assert sorted(_prompts("d", tmp_path)) == ["a", "b"]  # no split: the whole directory
    assert _prompts("d", tmp_path, split="test") == ["b"]
    with pytest.raises(SourceError, match="is one file; .* leave out split") as err:
        _prompts("d/train.jsonl", tmp_path, split="train")
    assert err.value.field == "split"


LAYOUTS = {
    "sharded": ["data/train-00000-of-00002.parquet", "data/train-00001-of-00002.parquet",
                "data/test-00000-of-00001.parquet", "data/extra_split-00000-of-00001.parquet"],
    "in dir names": ["train/a.jsonl", "train/b.jsonl", "dev/c.jsonl", "my-test/d.jsonl"],
    "in file names": ["chat_train.jsonl", "chat-validation.jsonl", "eval.jsonl", "readme.jsonl"],
    "none named": ["part1.jsonl", "sub/part2.jsonl"],
    "words inside words": ["contest.jsonl", "trainer/x.jsonl", "train2.jsonl"],
}  # fmt: skip


@pytest.mark.parametrize("layout", LAYOUTS, ids=list(LAYOUTS))
def test_splits_are_the_files_datasets_itself_gives_them(tmp_path, layout):
    from datasets.data_files import get_data_patterns, resolve_pattern

    for rel in LAYOUTS[layout]:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text('{"prompt": "x"}\n')
    ours = {
        s: sorted(map(str, fs)) for s, fs in split_files(tmp_path, list_files(tmp_path)).items()
    }

    def resolved(pattern: str) -> list[str]:
        try:
            return resolve_pattern(pattern, str(tmp_path))
        except FileNotFoundError:  # one of a split's patterns that matches nothing
            return []

    theirs = {
        split: sorted({f for p in patterns for f in resolved(p)})
        for split, patterns in get_data_patterns(str(tmp_path)).items()
    }
    assert ours == theirs


@pytest.mark.parametrize(
    ("source", "split", "message"),
    [
        ("hf://org/name", None, "a dataset on the hub is hf://datasets/ORG/NAME"),
        ("hf://datasets/org", None, r"hf://datasets/ORG/NAME\[@REVISION\]\[/PATH\]"),
        ("hf://datasets/org/name@", None, "nothing after @"),
        ("hf://datasets/org/name@..", None, "`..` may not appear"),
        ("hf://datasets/org/name/../x", None, "`..` may not appear"),
        ("s3://bucket/x", None, "only local paths, file:// URIs and hf://datasets/"),
        ("d", "train/x", "split"),
    ],
)
def test_the_spec_refuses_a_malformed_hub_source_or_split(source, split, message):
    fields = {"split": split} if split else {}
    doc = job_document(model={"weights": "m"}, datasets=[dataset("d", source, "prompt", **fields)])
    with pytest.raises(SpecError, match=message):
        parse_job(doc)


def test_validate_local_names_the_split_and_the_missing_hub_dataset(
    tmp_path, monkeypatch, capsys, kimi_like_dir
):
    from draftgen.cli import main
    from tests.jobs import kimi_like_model, write_job_yaml

    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty-cache"))
    datasets.DatasetDict(
        {
            "train": datasets.Dataset.from_dict(_conversations("a", 1)),
            "test": datasets.Dataset.from_dict(_conversations("b", 1)),
        }
    ).save_to_disk(str(tmp_path / "dd"))
    job = write_job_yaml(
        tmp_path / "job.yaml",
        job_document(
            model=kimi_like_model(kimi_like_dir),
            datasets=[
                dataset("saved", "dd", "sharegpt"),
                dataset("hub", "hf://datasets/org/absent", "prompt"),
                dataset("fine", "dd", "sharegpt", split="train"),
            ],
        ),
    )
    capsys.readouterr()
    assert main(["validate", "--local", str(job)]) == 2
    err = capsys.readouterr().err
    assert "spec.datasets[0](saved).split: " in err and "holds the splits train, test" in err
    assert "spec.datasets[1](hub).source: hf://datasets/org/absent: org/absent is not in" in err
    assert "datasets[2]" not in err


def test_a_saved_split_becomes_samples_through_the_models_template(
    tmp_path, kimi_like_dir, shared_tokenizer
):
    from draftgen.generator.prompts.inputs import iter_samples
    from draftgen.generator.prompts.samples import Sample
    from tests.generator_input.conftest import make_job

    messages = [[{"role": "user", "content": f"saved question {i}"}] for i in range(3)]
    datasets.DatasetDict(
        {
            "train_sft": datasets.Dataset.from_dict({"messages": messages}),
            "test_sft": datasets.Dataset.from_dict({"messages": messages[:1]}),
        }
    ).save_to_disk(str(tmp_path / "ultra"))
    job = make_job(kimi_like_dir, [dataset("chat", "ultra", "messages", split="train_sft")])
    ctx = shared_tokenizer(job, tmp_path)
    items = list(iter_samples(job, job.spec.datasets[0], base_dir=tmp_path, tokenizer_ctx=ctx))
    assert all(isinstance(i, Sample) for i in items) and len(items) == 3
    texts = [ctx.tokenizer.decode(i.input_ids) for i in items]
    assert [f"saved question {n}" in t for n, t in enumerate(texts)] == [True] * 3
    assert all(t.endswith("<think>") for t in texts)
