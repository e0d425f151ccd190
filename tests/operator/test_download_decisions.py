"""The pure decisions around the model download and the preflight Jobs (operator/decisions/)."""

from __future__ import annotations

from draftgen.controller import decisions, names
from draftgen.controller.readings import parse_download
from draftgen.spec.status import PreflightStatus


def _job(annotations: dict[str, str], failed: bool = False, deleting: bool = False) -> dict:
    meta: dict = {"name": "j", "annotations": annotations}
    if deleting:
        meta["deletionTimestamp"] = "2026-12-01T14:00:00Z"
    conds = [{"type": "Failed", "status": "True"}] if failed else []
    return {"metadata": meta, "status": {"conditions": conds}}


def test_the_download_restarts_only_for_another_revision() -> None:
    key = "org/name@main"
    assert decisions.download_action(None, key) == "start"
    assert decisions.download_action(_job({names.REVISION_ANNOTATION: key}), key) == "observe"
    assert decisions.download_action(_job({names.REVISION_ANNOTATION: "org/name@v2"}), key) == (
        "restart"
    )
    assert decisions.download_action(_job({}, deleting=True), key) == "wait_for_stop"


def test_a_failed_preflight_runs_again_after_a_spec_edit_and_not_before() -> None:
    ann = {names.CONFIG_HASH_ANNOTATION: "d1", names.GENERATION_ANNOTATION: "3"}
    assert decisions.preflight_action(None, "d1", 3) == "start"
    assert decisions.preflight_action(_job(ann), "d1", 3) == "observe"
    assert decisions.preflight_action(_job(ann), "d2", 3) == "restart"  # another document
    assert decisions.preflight_action(_job(ann, failed=True), "d1", 3) == "observe"
    assert decisions.preflight_action(_job(ann, failed=True), "d1", 4) == "restart"
    assert decisions.preflight_action(_job(ann), "d1", 4) == "observe"  # passed: kept


def test_progress_text_and_the_download_page() -> None:
    assert decisions.download_progress_text(None, None) == ""
    assert decisions.download_progress_text(12_300_000_000, None) == "12.3GB"
    assert decisions.download_progress_text(244_000_000_000, 595_000_000_000) == "41% of 595.0GB"
    page = (
        "# TYPE draftgen_model_download_bytes gauge\ndraftgen_model_download_bytes 1.5e+07\n"
        "# TYPE draftgen_model_download_total_bytes gauge\n"
        "draftgen_model_download_total_bytes 6e+07\n"
    )
    assert parse_download(page) == (15_000_000, 60_000_000)
    assert parse_download("# nothing here\n") is None


def test_the_failure_messages_name_every_problem_and_the_way_to_retry() -> None:
    report = PreflightStatus.model_validate(
        {
            "passed": False,
            "tokenizerPassed": False,
            "tokenizer": "model.specialTokens: '<x>' encodes to 3 ids",
            "datasets": [
                {"name": "a", "passed": False, "problem": "spec.datasets[a].source: gone"}
            ],
        }
    )
    text = decisions.preflight_failure_message(report, "")
    assert "'<x>' encodes to 3 ids" in text and "spec.datasets[a].source: gone" in text
    assert "no server was created" in text and "edit the spec" in text
    crash = decisions.preflight_failure_message(None, "Traceback ... MemoryError")
    assert "MemoryError" in crash
    assert decisions.preflight_report("Traceback (most recent call last)") is None
    assert decisions.download_commit('{"commit": "abc", "bytes": 1}') == "abc"
    assert decisions.download_commit("killed") is None
