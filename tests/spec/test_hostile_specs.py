"""Class 4 of issue 21: specs that validated and then failed every request, or crashed the reader,
are refused at validation naming the field (or the line) and the fix."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from draftgen.spec import SpecError, load_job, parse_job
from tests.jobs import job_document

BASE = job_document(
    "job",
    model={"weights": "/models/m"},
    datasets=[{"name": "chat", "source": "chat.jsonl", "format": "messages"}],
)


def problems_of(**spec: object) -> list[str]:
    doc = copy.deepcopy(BASE)
    doc["spec"].update(spec)
    with pytest.raises(SpecError) as err:
        parse_job(doc)
    return err.value.problems


def chat(**fields: object) -> list[dict]:
    return [{"name": "chat", "source": "chat.jsonl", "format": "messages", **fields}]


# (spec fields, the field the message names, words it must contain); tests/spec/spec_cases.py
# also runs each through `draftgen validate` and the operator.
REFUSED_SPECS = [
    ({"sampling": {"topK": 0}}, "spec.sampling.topK", ["keeps no token", "-1"]),
    (
        {"datasets": chat(sampling={"topK": 0})},
        "spec.datasets[0](chat).sampling.topK",
        ["-1"],
    ),
    ({"server": {"replicas": 0}}, "spec.server.replicas", ["greater than or equal to 1"]),
    (
        {"datasets": chat(budget={"maxSamples": True})},
        "spec.datasets[0](chat).budget.maxSamples",
        ["whole number"],
    ),
    ({"server": {"tensorParallelSize": True}}, "spec.server.tensorParallelSize", ["whole"]),
    ({"server": {"port": 30000.0}}, "spec.server.port", ["whole number"]),
    ({"server": {"port": "30000"}}, "spec.server.port", ["whole number"]),
    ({"suspend": 1}, "spec.suspend", ["true or false"]),
    ({"model": {"weights": "/m", "trustRemoteCode": "yes"}}, "spec.model.trustRemoteCode", []),
    ({"sampling": {"temperature": True}}, "spec.sampling.temperature", []),
    ({"sampling": {"stopTokenIds": [1, False]}}, "spec.sampling.stopTokenIds[1]", []),
]


@pytest.mark.parametrize("spec, field, words", REFUSED_SPECS)
def test_a_spec_that_would_fail_every_request_is_refused(spec, field, words) -> None:
    (problem,) = problems_of(**spec)
    assert problem.startswith(f"{field}: "), problem
    assert all(w in problem for w in words), problem


def _job_file(tmp_path: Path, text: str | bytes) -> Path:
    path = tmp_path / "job.yaml"
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return path


BASE_YAML = yaml.safe_dump(BASE, sort_keys=False)


def _refused(path: Path) -> str:
    with pytest.raises(SpecError) as err:
        load_job(path)
    (problem,) = err.value.problems
    return problem


def test_a_duplicate_key_is_refused_not_last_wins(tmp_path: Path) -> None:
    text = BASE_YAML.replace("spec:\n", "spec:\n  suspend: true\n  suspend: false\n")
    problem = _refused(_job_file(tmp_path, text))
    assert "duplicate key 'suspend'" in problem and "line 6" in problem and "keep one" in problem


def test_an_alias_bomb_is_refused_before_it_expands(tmp_path: Path) -> None:
    bomb = ['  lol0: &l0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    bomb += [f"  lol{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * 9) + "]" for i in range(1, 10)]
    text = BASE_YAML + "  server:\n    resources:\n" + "\n".join("  " + b for b in bomb) + "\n"
    problem = _refused(_job_file(tmp_path, text))
    assert "alias *l0" in problem and "write the value out" in problem


def test_deep_nesting_is_refused_without_a_traceback(tmp_path: Path) -> None:
    deep = "[" * 20_000 + "]" * 20_000
    text = BASE_YAML + f"  server:\n    resources:\n      x: {deep}\n"
    problem = _refused(_job_file(tmp_path, text))
    assert "nested deeper than 64 levels" in problem


def test_a_non_utf8_file_is_refused_naming_the_byte(tmp_path: Path) -> None:
    raw = BASE_YAML.replace("name: job", "name: job # caf\xe9").encode("latin-1")
    problem = _refused(_job_file(tmp_path, raw))
    assert "not UTF-8" in problem and "save the job file as UTF-8" in problem


def test_max_new_tokens_not_below_a_known_context_is_refused() -> None:
    (problem,) = problems_of(server={"contextLength": 4096}, sampling={"maxNewTokens": 4096})
    assert problem.startswith("spec: sampling.maxNewTokens: 4096 leaves no room"), problem
    assert "lower maxNewTokens below 4096" in problem
    (problem,) = problems_of(
        server={"contextLength": 4096}, datasets=chat(sampling={"maxNewTokens": 5000})
    )
    assert problem.startswith("spec: datasets[0](chat).sampling.maxNewTokens: 5000"), problem
