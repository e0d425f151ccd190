"""One validator: `draftgen validate` (cluster rules, the default) and the operator refuse the
same specs, and `validate --local` refuses exactly what a local run's spec check refuses.

The table is every spec case of tests/spec and tests/faults (the refused documents and the valid
ones they start from), each as written and with the claims a cluster needs added, plus the
cluster-only refusals (no output claim, no inputs claim, local weights without a volume)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from draftgen.cli import main
from draftgen.contract.generator_cli import ExitCode
from draftgen.controller.settings import OperatorSettings
from draftgen.controller.validate import admission_problems
from draftgen.spec import API_VERSION, SpecError, parse_job
from tests.faults import test_security
from tests.spec import test_extra_args_bypass, test_hostile_specs, test_invalid_specs

REPO = Path(__file__).resolve().parents[2]


def _with(doc: dict[str, Any], **spec: Any) -> dict[str, Any]:
    out = copy.deepcopy(doc)
    out["spec"].update(spec)
    return out


def _cases() -> list[tuple[str, dict[str, Any]]]:
    cases: list[tuple[str, dict[str, Any]]] = []
    for doc, field, words in test_invalid_specs.CASES:
        cases.append((f"invalid:{field}:{words[0] if words else ''}", doc))
    cases.append(("invalid:base", test_invalid_specs.BASE))
    for spec, field, _ in test_hostile_specs.REFUSED_SPECS:
        cases.append((f"hostile:{field}", _with(test_hostile_specs.BASE, **spec)))
    bypass = test_extra_args_bypass
    for flag in bypass.OWNED:
        for form, arg in bypass.spellings(flag).items():
            doc = _with(bypass.BASE, server={"extraArgs": ["--page-size", "16", arg]})
            cases.append((f"extraArgs:{flag.value}:{form}", doc))
    for arg, _ in bypass.BYPASSES:
        cases.append((f"extraArgs:{arg}", _with(bypass.BASE, server={"extraArgs": [arg, "x"]})))
    variants = test_security._job_variants()
    for i, doc in enumerate(variants):
        cases.append((f"security:variant{i}", doc))
    for field, value in test_security.ESCAPING_PATHS:
        doc = copy.deepcopy(variants[0])
        if field == "path":
            doc["spec"]["output"]["path"] = value
        else:
            doc["spec"]["datasets"][0][field] = value
        cases.append((f"security:{field}={value}", doc))
    token = copy.deepcopy(variants[2])
    token["spec"]["model"]["hfToken"] = test_security.TOKEN
    cases.append(("security:inline-token", token))
    for name in ("kimi-k2.5.yaml", "demo.yaml"):
        cases.append((f"example:{name}", yaml.safe_load((REPO / "examples" / name).read_text())))
    return cases


def _for_a_cluster(doc: dict[str, Any]) -> dict[str, Any]:
    """The document with what a cluster needs (claims, a model volume) added where missing."""
    out = copy.deepcopy(doc)
    spec = out.get("spec")
    if not isinstance(spec, dict):
        return out
    for key in ("inputs", "output"):
        if isinstance(spec.get(key, {}), dict):
            spec.setdefault(key, {}).setdefault("claimName", f"{key}-claim")
    model = spec.get("model")
    if isinstance(model, dict) and "volume" not in model:
        model["volume"] = {"claimName": "models", "mountPath": "/models"}
    return out


CASES = _cases()
TABLE = [(f"{name}[{how}]", d) for name, doc in CASES for how, d in
         (("as written", doc), ("cluster-ready", _for_a_cluster(doc)))]  # fmt: skip


def _operator_refuses(doc: dict[str, Any]) -> list[str]:
    """What `kubectl apply` and the operator refuse: the API server serves only our apiVersion,
    then the operator's admission check (what every reconcile runs, plus the name's length)."""
    served = [] if doc.get("apiVersion") == API_VERSION else ["apiVersion"]
    return served + admission_problems(doc, OperatorSettings())


def _local_refuses(doc: dict[str, Any]) -> list[str]:
    try:
        parse_job(doc)
    except SpecError as err:
        return err.problems
    return []


def _validate(tmp_path: Path, capsys, doc: dict[str, Any], *flags: str) -> tuple[int, str]:
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    capsys.readouterr()
    code = main(["validate", *flags, str(path)])
    return code, capsys.readouterr().err


def test_the_table_holds_refused_and_accepted_specs_of_both_kinds() -> None:
    refused_by_operator = [n for n, d in TABLE if _operator_refuses(d)]
    accepted_by_operator = [n for n, d in TABLE if not _operator_refuses(d)]
    cluster_only = [n for n, d in TABLE if _operator_refuses(d) and not _local_refuses(d)]
    assert len(CASES) > 60
    assert len(refused_by_operator) > 60 and len(accepted_by_operator) >= 4
    assert cluster_only, "some spec must be refused only under the cluster's rules"


@pytest.mark.parametrize("doc", [d for _, d in TABLE], ids=[n for n, _ in TABLE])
def test_validate_and_the_operator_refuse_the_same_specs(tmp_path, capsys, monkeypatch, doc):
    for name in [k for k in __import__("os").environ if k.startswith("DRAFTGEN_OPERATOR_")]:
        monkeypatch.delenv(name)  # the settings the operator test uses: its defaults
    operator = _operator_refuses(doc)
    code, err = _validate(tmp_path, capsys, doc)
    assert code == (ExitCode.INVALID if operator else ExitCode.OK), (operator, err)
    for problem in operator:
        assert problem.split(":")[0] in err, (problem, err)
    local = _local_refuses(doc)
    code, err = _validate(tmp_path, capsys, doc, "--local", "--spec-only")
    assert code == (ExitCode.INVALID if local else ExitCode.OK), (local, err)


@pytest.mark.parametrize(
    "spec_change, field",
    [
        ({"output": {}}, "spec.output.claimName"),
        ({"inputs": {}}, "spec.inputs.claimName"),
        ({"model": {"weights": "/models/kimi"}}, "spec.model.volume"),
    ],
)
def test_cluster_only_rules_name_the_field_and_offer_local(tmp_path, capsys, spec_change, field):
    doc = _with(_for_a_cluster(test_invalid_specs.BASE), **spec_change)
    code, err = _validate(tmp_path, capsys, doc)
    assert code == ExitCode.INVALID and f"{field}: required" in err
    assert "(cluster rules)" in err and "draftgen validate --local" in err
    assert _validate(tmp_path, capsys, doc, "--local", "--spec-only")[0] == ExitCode.OK


def test_a_hub_cache_dataset_is_refused_in_a_cluster_and_accepted_locally(tmp_path, capsys):
    doc = _with(
        _for_a_cluster(test_invalid_specs.BASE),
        datasets=[{"name": "q", "source": "hf://datasets/org/q", "format": "prompt"}],
    )
    code, err = _validate(tmp_path, capsys, doc)
    assert code == ExitCode.INVALID
    assert "spec.datasets[0](q).source: hf://datasets/org/q is read from a local hub cache" in err
    assert "onto the inputs volume" in err
    assert _validate(tmp_path, capsys, doc, "--local", "--spec-only")[0] == ExitCode.OK
