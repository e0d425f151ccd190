"""Unknown fields get the closest name the spec has at that place; an unset maxNewTokens and a
dataset without a budget are legal and warned about with what will happen."""

from __future__ import annotations

import copy

import pytest

from draftgen.spec import DEFAULT_MAX_NEW_TOKENS, SpecError, parse_job
from tests.jobs import job_document

BASE = job_document(
    "job",
    model={"weights": "/models/m"},
    sampling={"maxNewTokens": 4096},
    datasets=[
        {"name": "chat", "source": "chat.jsonl", "format": "messages",
         "budget": {"completionTokens": 1000}},
    ],
)  # fmt: skip


def _problems(doc) -> list[str]:
    with pytest.raises(SpecError) as err:
        parse_job(doc)
    return err.value.problems


@pytest.mark.parametrize(
    "where, typed, expected",
    [
        (("spec", "sampling"), "maxNewToken", "maxNewTokens"),
        (("spec", "sampling"), "maxnewtokens", "maxNewTokens"),
        (("spec", "server"), "replica", "replicas"),
        (("spec", "server", "hierarchicalCache"), "sizeGbPerRank", "sizeGBPerRank"),
        (("spec",), "dataset", "datasets"),
        (("spec", "datasets", 0, "budget"), "completionToken", "completionTokens"),
        (("spec", "datasets", 0), "budgets", "budget"),
    ],
)
def test_an_unknown_field_gets_the_closest_name_there(where, typed, expected):
    doc = copy.deepcopy(BASE)
    node = doc
    for part in where:
        node = node[part] if isinstance(part, int) or part in node else node.setdefault(part, {})
    node[typed] = 1
    problems = [p for p in _problems(doc) if "unknown field" in p]
    assert len(problems) == 1, problems
    assert problems[0].endswith(f"unknown field; did you mean `{expected}`?"), problems


def test_a_name_like_no_field_gets_the_generic_fix():
    doc = copy.deepcopy(BASE)
    doc["spec"]["server"] = {"frobnicate": 1}
    (problem,) = _problems(doc)
    assert "did you mean" not in problem and "check its spelling" in problem


def test_unset_max_new_tokens_and_no_budget_are_warned_with_what_will_be_used():
    doc = copy.deepcopy(BASE)
    del doc["spec"]["sampling"]
    doc["spec"]["datasets"].append({"name": "glaive", "source": "g.jsonl", "format": "glaive",
                                    "sampling": {"maxNewTokens": 2048}})  # fmt: skip
    warnings = parse_job(doc).spec.warnings()
    (tokens,) = [w for w in warnings if w.startswith("sampling.maxNewTokens")]
    assert f"not set; {DEFAULT_MAX_NEW_TOKENS}" in tokens and "for chat:" in tokens  # not glaive
    (budget,) = [w for w in warnings if "budget" in w]
    assert budget.startswith("datasets[1](glaive).budget: no limit; every row of g.jsonl")


def test_a_job_that_sets_both_has_no_such_warning():
    assert parse_job(BASE).spec.warnings() == []
