"""Class 2 of issue 21: `server.extraArgs` cannot set a flag the spec owns in any spelling SGLang's
argparse accepts (an unambiguous prefix, `--flag=value`, an alias). Each is refused at validation
naming the element (`spec.server.extraArgs[2]`) and the field to set instead."""

from __future__ import annotations

import copy

import pytest

from draftgen.contract.sglang_flags import SGLangFlag, spec_path
from draftgen.contract.sglang_options import OPTIONS
from draftgen.spec import SpecError, parse_job
from tests.jobs import job_document

BASE = job_document(
    "job",
    model={"weights": "/models/m"},
    datasets=[{"name": "chat", "source": "chat.jsonl", "format": "messages"}],
)
OWNED = [f for f in SGLangFlag if f.owner]


def spellings(flag: SGLangFlag) -> dict[str, str]:
    """The three bypass forms of an owned flag, derived from SGLang's real option table."""
    names = [opt for opt, dest in OPTIONS.items() if dest == flag.dest]
    out = {"equals": f"{flag.value}=1"}
    aliases = [n for n in names if n != flag.value]
    if aliases:
        out["alias"] = aliases[0]
    # The shortest proper prefix SGLang reads as this flag and nothing else.
    for length in range(3, len(flag.value)):
        prefix = flag.value[:length]
        if prefix not in OPTIONS and {d for o, d in OPTIONS.items() if o.startswith(prefix)} == {
            flag.dest
        }:
            out["prefix"] = f"{prefix}=1"
            break
    return out


def refused_with(extra_args: list[str]) -> list[str]:
    doc = copy.deepcopy(BASE)
    doc["spec"]["server"] = {"extraArgs": extra_args}
    with pytest.raises(SpecError) as err:
        parse_job(doc)
    return err.value.problems


def test_every_owned_flag_has_an_abbreviation_to_test() -> None:
    assert all("prefix" in spellings(f) for f in OWNED)
    assert {f for f in OWNED if "alias" in spellings(f)} >= {
        SGLangFlag.TP_SIZE,
        SGLangFlag.MODEL_PATH,
        SGLangFlag.ENABLE_HIERARCHICAL_CACHE,
    }


@pytest.mark.parametrize("flag", OWNED, ids=[f.value for f in OWNED])
def test_an_owned_flag_is_refused_in_every_spelling(flag: SGLangFlag) -> None:
    for form, arg in spellings(flag).items():
        problems = refused_with(["--page-size", "16", arg])
        assert len(problems) == 1, (form, problems)
        problem = problems[0]
        field = spec_path(flag.owner or "")
        assert problem.startswith("spec.server.extraArgs[2]: "), (form, problem)
        assert f"set {field} instead" in problem, (form, problem)
        assert flag.value in problem, (form, problem)


# (the extraArgs element, words the message must contain)
BYPASSES = [
    ("--tp=4", ["--tp (SGLang reads it as --tp-size)", "spec.server.tensorParallelSize"]),
    ("--kv-cache=fp8_e4m3", ["spec.server.kvCacheDtype"]),
    ("--mem=0.97", ["spec.server.memFractionStatic"]),
    ("--schedule-conservativeness", ["spec.server.scheduleConservativeness"]),
    ("--schedule-c=0.3", ["spec.server.scheduleConservativeness"]),
    ("--hicache-si=300", ["spec.server.hierarchicalCache.sizeGBPerRank"]),
    ("--model=/other", ["spec.model.weights"]),
    ("--kv=fp8_e4m3", ["ambiguous prefix", "--kv-cache-dtype", "spell the flag out"]),
    ("--hos", ["--host", "0.0.0.0"]),
    ("--config", ["further flags from that file"]),
]


@pytest.mark.parametrize("arg, words", BYPASSES)
def test_the_issues_bypasses_are_refused_with_the_fix(arg: str, words: list[str]) -> None:
    (problem,) = refused_with([arg, "x"])
    assert problem.startswith("spec.server.extraArgs[0]: ")
    assert all(w in problem for w in words), problem


def test_unowned_flags_and_values_still_pass() -> None:
    doc = copy.deepcopy(BASE)
    args = ["--page-size", "16", "--max-total-tokens=4096", "--enable-mixed-chunk", "-1", "x"]
    doc["spec"]["server"] = {"extraArgs": args}
    assert parse_job(doc).spec.server.extra_args == args
