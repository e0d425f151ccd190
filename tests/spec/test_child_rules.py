"""Specs whose children a real API server refuses (422): `draftgen validate` and the operator's
check refuse them first, naming the spec's field; and each is a spec whose rendered children the
emulator's kube-apiserver rules (tests/operator/emulator/validation.py) do refuse, so the check
follows the server rather than a guess. The valid example's children pass those rules."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from draftgen.cli import main
from draftgen.controller.render import render_all
from draftgen.controller.settings import OperatorSettings
from draftgen.controller.validate import admission_problems
from tests.operator.emulator.validation import invalid

REPO = Path(__file__).resolve().parents[2]
PLURALS = {"Job": "jobs", "Deployment": "deployments", "Pod": "pods"}


def _kimi() -> dict:
    return yaml.safe_load((REPO / "examples" / "kimi-k2.5.yaml").read_text())


def _case(path: str, value) -> dict:
    doc = _kimi()
    node = doc["spec"]
    keys = path.split(".")
    for key in keys[:-1]:
        node = node.setdefault(key, {})
    node[keys[-1]] = value
    return doc


# (document, the field the refusal must name, words it must contain)
CASES = [
    (_case("inputs.mountPath", "/tmp"), "spec.inputs.mountPath", ["/tmp", "must be unique"]),
    (
        _case("model.volume.mountPath", "/dev/shm"),
        "spec.model.volume.mountPath",
        ["/dev/shm", "must be unique"],
    ),
    (
        _case("inputs.mountPath", _kimi()["spec"]["model"]["volume"]["mountPath"]),
        "spec.model.volume.mountPath",
        ["spec.inputs.mountPath", "must be unique"],
    ),
    (
        _case(
            "server.tolerations",
            [{"key": "nvidia.com/gpu", "operator": "Exists", "value": "true"}],
        ),
        "spec.server.tolerations[0].value",
        ["Exists"],
    ),
]


def _children_refused(doc: dict) -> list[str]:
    """kube-apiserver's 422 messages for the job's rendered children (the rules the emulator
    plays), rendered as the operator would with its checks bypassed."""
    settings = OperatorSettings(preflight=True)
    objects = render_all("kimi", "drafters", copy.deepcopy(doc["spec"]), settings)
    return [m for o in objects if (m := invalid(PLURALS.get(o["kind"], ""), o))]


@pytest.mark.parametrize(("doc", "field", "words"), CASES, ids=[c[1] for c in CASES])
def test_a_spec_whose_children_the_api_server_refuses_is_refused_naming_the_field(
    doc, field, words, tmp_path, capsys
) -> None:
    assert _children_refused(doc), "the API server's rules accept these children"
    problems = admission_problems(doc, OperatorSettings())
    named = [p for p in problems if p.startswith(field)]
    assert named, problems
    assert all(w in named[0] for w in words), named[0]

    job = tmp_path / "job.yaml"
    job.write_text(yaml.safe_dump(doc))
    assert main(["validate", str(job)]) != 0
    out = capsys.readouterr()
    assert field in out.out + out.err


def test_the_valid_example_renders_children_the_api_server_accepts() -> None:
    assert _children_refused(_kimi()) == []
    assert admission_problems(_kimi(), OperatorSettings()) == []
