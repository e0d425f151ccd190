"""The preflight (generator/prompts/input_preflight.py) as `draftgen validate --inputs`, `draftgen
preflight` (the operator's preflight Job) and `draftgen generate` run it: a missing source, a
malformed first row and a wrong special token each fail with the dataset and the fix, and
`generate` refuses before it asks any server for anything. Real tokenizer (tiny-kimi), real
parsers, no server."""

from __future__ import annotations

import json
import socket
import threading
from pathlib import Path

import pytest

from draftgen.cli import main
from draftgen.contract.generator_cli import ExitCode
from draftgen.contract.preflight_cli import TERMINATION_MESSAGE_LIMIT
from draftgen.generator.prompts.input_preflight import termination_message
from draftgen.spec.status import DatasetPreflight, PreflightStatus
from tests.jobs import job_document, write_job_yaml

KIMI_TOKENS = ["<think>", "</think>", "<|im_end|>"]
GOOD = [
    {"id": f"r{i}", "messages": [{"role": "user", "content": "hi " * (i + 1)}]} for i in range(40)
]


def _write(path: Path, rows: list) -> None:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))


def _job(tmp_path: Path, tiny_kimi: Path, datasets: list[dict], **model) -> Path:
    model = {
        "weights": str(tiny_kimi),
        "chatTemplateKwargs": {"thinking": True},
        "specialTokens": KIMI_TOKENS,
        "generationPrefix": "<think>",
        **model,
    }
    doc = job_document(
        "pf",
        model=model,
        server={"tensorParallelSize": 1},
        sampling={"maxNewTokens": 256},  # below tiny-kimi's 4096 context (validate checks it)
        output={"path": "out"},
        datasets=datasets,
    )
    return write_job_yaml(tmp_path / "job.yaml", doc)


@pytest.fixture
def inputs(tmp_path: Path) -> Path:
    _write(tmp_path / "chat.jsonl", GOOD)
    _write(tmp_path / "bad-first.jsonl", ['{"id": "broken", "messages": [', *GOOD[:3]])
    _write(tmp_path / "prompts.jsonl", [{"prompt": f"say {i}"} for i in range(5)])
    return tmp_path


GOOD_DATASET = {"name": "chat", "source": "chat.jsonl", "format": "messages"}
CASES = {
    "missing source": (
        [GOOD_DATASET, {"name": "gone", "source": "nowhere.jsonl", "format": "messages"}],
        {},
        ["spec.datasets[gone].source", "no such file", "check the dataset's source"],
        ExitCode.INVALID,
    ),
    "malformed first row": (
        [GOOD_DATASET, {"name": "bad", "source": "bad-first.jsonl", "format": "messages"}],
        {},
        ["spec.datasets[bad]", "first row (index 0)", "malformed_json", "format: messages"],
        ExitCode.INVALID,
    ),
    "wrong format": (
        [{"name": "prompts", "source": "prompts.jsonl", "format": "messages"}],
        {},
        ["spec.datasets[prompts]", "format: messages matches the file"],
        ExitCode.INVALID,
    ),
    "wrong special token": (
        [GOOD_DATASET],
        {"specialTokens": [*KIMI_TOKENS, "<|tool_call_start|>"]},
        ["model.specialTokens", "'<|tool_call_start|>'", "remove the token"],
        ExitCode.INTEGRITY,
    ),
}


def test_a_good_job_passes_with_a_report_per_dataset(tmp_path, tiny_kimi, inputs, capsys):
    datasets = [GOOD_DATASET, {"name": "prompts", "source": "prompts.jsonl", "format": "prompt"}]
    job = _job(tmp_path, tiny_kimi, datasets)
    report = tmp_path / "report.json"
    assert main(["preflight", "--job", str(job), "--rows", "8", "--report", str(report)]) == 0
    out = capsys.readouterr().out
    assert "chat: 8 rows read, 8 samples, rejects: none; prompt tokens p50" in out
    assert "prompts: 5 rows read, 5 samples" in out
    parsed = PreflightStatus.model_validate_json(report.read_text())
    assert parsed.passed and parsed.tokenizer_passed
    chat = parsed.datasets[0]
    assert (chat.name, chat.rows_read, chat.samples) == ("chat", 8, 8)
    assert chat.prompt_tokens and chat.prompt_tokens.p50 <= chat.prompt_tokens.p90
    assert chat.prompt_tokens.p99 <= chat.prompt_tokens.max
    assert "prompts end with '<think>'" in parsed.tokenizer
    assert main(["validate", "--local", "--inputs", str(job)]) == 0


@pytest.mark.parametrize("case", list(CASES))
def test_each_mistake_fails_validate_and_the_preflight_with_the_dataset_and_fix(
    case, tmp_path, tiny_kimi, inputs, capsys
):
    datasets, model, expected, code = CASES[case]
    job = _job(tmp_path, tiny_kimi, datasets, **model)
    assert main(["validate", "--local", "--spec-only", str(job)]) == 0  # the spec alone is fine
    capsys.readouterr()
    assert main(["validate", "--local", "--inputs", str(job)]) == code  # as `preflight` exits
    err = capsys.readouterr().err
    for text in expected:
        assert text in err, err
    report = tmp_path / "report.json"
    assert main(["preflight", "--job", str(job), "--report", str(report)]) == code
    err = capsys.readouterr().err
    for text in expected:
        assert text in err, err
    parsed = PreflightStatus.model_validate_json(report.read_text())
    assert not parsed.passed
    assert any(text in json.dumps(parsed.model_dump()) for text in expected[:1])


@pytest.mark.parametrize("case", ["missing source", "wrong special token"])
def test_generate_refuses_before_it_asks_any_server(case, tmp_path, tiny_kimi, inputs, capsys):
    datasets, model, expected, code = CASES[case]
    job = _job(tmp_path, tiny_kimi, datasets, **model)
    # A listening socket stands where the server would be: nothing may connect to it.
    connected: list[object] = []
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        listener.settimeout(0.2)

        def accept() -> None:
            while listener.fileno() != -1 and not stop.is_set():
                try:
                    connected.append(listener.accept())
                except (TimeoutError, OSError):
                    continue

        stop = threading.Event()
        watcher = threading.Thread(target=accept, daemon=True)
        watcher.start()
        port = listener.getsockname()[1]
        result = main(
            [
                "generate",
                "--job",
                str(job),
                "--server",
                f"http://127.0.0.1:{port}",
                "--output",
                str(tmp_path / "out"),
                "--progress",
                "log",
            ]
        )
        stop.set()
        watcher.join()
    assert result == code
    assert connected == []
    assert expected[0] in capsys.readouterr().err


def test_generate_only_warns_about_a_rejected_first_row(tmp_path, tiny_kimi, inputs) -> None:
    """`generate` records bad rows as rejects and goes on: the same check is a warning there."""
    from draftgen.generator.prompts.input_preflight import check_inputs
    from draftgen.generator.prompts.pretokenize import open_tokenizer
    from draftgen.spec import load_job

    datasets = CASES["malformed first row"][0]
    job = load_job(_job(tmp_path, tiny_kimi, datasets))
    with open_tokenizer(job, tmp_path, workers=0) as ctx:
        lenient, code = check_inputs(job, tmp_path, ctx, strict=False)
        strict, strict_code = check_inputs(job, tmp_path, ctx)
    assert lenient.passed and code == ExitCode.OK
    assert "first row (index 0)" in lenient.datasets[1].warning
    assert lenient.datasets[1].rejects == {"malformed_json": 1}
    assert not strict.passed and strict_code == ExitCode.INVALID


def test_the_termination_message_fits_the_kubelets_limit_and_keeps_the_failures() -> None:
    many = [
        DatasetPreflight(name=f"ds{i}", rows_read=32, samples=32, rejects={"r" * 40: i})
        for i in range(200)
    ]
    failing = DatasetPreflight(
        name="broken", passed=False, problem="spec.datasets[broken]: " + "x" * 5000
    )
    report = PreflightStatus(passed=False, tokenizer="t" * 3000, datasets=[*many, failing])
    text = termination_message(report)
    assert len(text.encode()) <= TERMINATION_MESSAGE_LIMIT
    parsed = PreflightStatus.model_validate_json(text)
    assert [d.name for d in parsed.datasets] == ["broken"]
    assert parsed.datasets[0].problem.startswith("spec.datasets[broken]")
