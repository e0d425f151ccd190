"""The data-quality report of a real run (tiny-kimi on the CPU SGLang server): `draftgen stats
--json`, the dataset manifest and the generator's metrics give the same figures, counted from
what SGLang said; a small `maxNewTokens` makes `length` finishes, and every one is counted as
truncated. A second dataset drops replies caught in a loop (`onDegenerate: drop`)."""

from __future__ import annotations

import itertools
import json

import pytest

from draftgen.cli import main
from draftgen.output.reply_facts import repetition

from .gen_helpers import (
    THINK,
    direct_generate,
    prompt_rows,
    records,
    rejects,
    run_inprocess,
    template_ids,
    write_job,
    write_jsonl,
)

pytestmark = pytest.mark.sglang

LOOP_TOKENS = 128
"""Long enough for the rule (64 tokens at least) to read a loop in the random model's replies."""
LOOP_ROWS = 4


def _page(runner) -> dict[tuple[str, frozenset], float]:
    """The generator's page: (sample name, its labels but the job's) → value."""
    from prometheus_client import generate_latest
    from prometheus_client.parser import text_string_to_metric_families

    text = generate_latest(runner.metrics.registry).decode()
    job = {"generationjob", "namespace"}
    return {
        (s.name, frozenset((k, v) for k, v in s.labels.items() if k not in job)): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def _sum(page, name: str, **labels: str) -> float:
    """The sum over the series of `name` that carry `labels`."""
    want = set(labels.items())
    return sum(v for (n, lab), v in page.items() if n == name and want <= lab)


@pytest.fixture(scope="module")
def quality_run(tmp_path_factory, tiny_kimi, sglang_server):
    d = tmp_path_factory.mktemp("quality")
    write_jsonl(d / "short.jsonl", prompt_rows(8, "s"))
    write_jsonl(d / "loops.jsonl", prompt_rows(LOOP_ROWS, "l"))
    job = write_job(
        d,
        tiny_kimi,
        [
            {"name": "short", "source": "short.jsonl", "format": "prompt"},
            {
                "name": "loops",
                "source": "loops.jsonl",
                "format": "prompt",
                "onDegenerate": "drop",
                "sampling": {"maxNewTokens": LOOP_TOKENS},
            },
        ],
        sampling={"maxNewTokens": 6},
    )
    runner = run_inprocess(job, sglang_server.url, d / "out")
    return d / "out", runner


def test_stats_manifest_and_metrics_agree(quality_run, capsys):
    out, runner = quality_run
    assert main(["stats", str(out), "--json"]) == 0
    stats = {d["dataset"]: d["quality"] for d in json.loads(capsys.readouterr().out)["datasets"]}
    page = _page(runner)
    for name in ("short", "loops"):
        manifest = json.loads((out / name / "manifest.json").read_text())
        q = stats[name]
        assert q == manifest["quality"]
        assert manifest["finish_reasons"] == q["finish_reasons"]
        for reason in ("stop", "length"):
            samples = _sum(page, "draftgen_samples_total", dataset=name, finish_reason=reason)
            assert samples == q["finish_reasons"][reason]
        for metric, key in (
            ("draftgen_aborted_samples_total", "abort"),
            ("draftgen_thinking_samples_total", "thinking"),
            ("draftgen_tool_call_samples_total", "tool_calls"),
            ("draftgen_replies_checked_total", "replies_checked"),
            ("draftgen_degenerate_samples_total", "degenerate"),
            ("draftgen_completion_tokens_p95", "completion_tokens_p95"),
        ):
            want = q["finish_reasons"]["abort"] if key == "abort" else q[key]
            if want is None:  # no samples, no percentile: the gauge is absent, not 0
                assert not any(n == metric and ("dataset", name) in lab for n, lab in page)
            else:
                assert _sum(page, metric, dataset=name) == want, metric
        tokens = _sum(page, "draftgen_completion_tokens_total", dataset=name)
        samples = _sum(page, "draftgen_samples_total", dataset=name)
        assert (round(tokens / samples, 2) if samples else 0.0) == q["completion_tokens_mean"]
        dropped = _sum(page, "draftgen_rejects_total", dataset=name, reason="degenerate_repetition")
        assert dropped == q["degenerate_dropped"]


def test_every_length_finish_is_counted_as_truncated(quality_run, capsys):
    out, _ = quality_run
    recs = records(out / "short")
    length = sum(r["finish_reason"] == "length" for r in recs)
    assert length > 0  # 6 new tokens: the tiny model rarely stops that soon
    manifest = json.loads((out / "short" / "manifest.json").read_text())
    q = manifest["quality"]
    assert q["truncated"] == length and q["finish_reasons"]["length"] == length
    assert q["truncation_rate"] == round(length / len(recs), 6)
    lengths = sorted(r["completion_tokens"] for r in recs)
    assert q["completion_tokens_p95"] == lengths[-(-95 * len(lengths) // 100) - 1]


def test_kimi_replies_after_the_think_prefix_count_as_reasoning(quality_run, tiny_kimi):
    """Every prompt ends with <think>: Kimi's parser reads a reply that writes anything before
    its `</think>`, tool section or end token as reasoning, cut by the length limit or not; one
    that closes the block or ends at once holds none (SGLang's `reasoning_content: null`)."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_kimi)
    ends = {"</think>", "<|tool_calls_section_begin|>", "<|im_end|>", "[EOS]", "[EOT]"}
    stops = {tokenizer.convert_tokens_to_ids(t) for t in ends} - {tokenizer.unk_token_id, None}

    def reasons(ids: list[int]) -> bool:
        body = list(itertools.dropwhile(lambda i: i == THINK, ids))
        return bool(body) and body[0] not in stops

    out, _ = quality_run
    recs = records(out / "short")
    assert all(r["input_ids"][-1] == THINK for r in recs)
    assert all(r["meta"]["reply"]["reasoning"] is reasons(r["output_ids"]) for r in recs)
    q = json.loads((out / "short" / "manifest.json").read_text())["quality"]
    assert q["replies_checked"] == len(recs)
    assert q["thinking"] == sum(reasons(r["output_ids"]) for r in recs) > 0


def test_dropped_loops_are_rejects_and_loop_again_when_asked_directly(
    quality_run, sglang_server, tiny_kimi
):
    """The random-weight model loops at greedy decoding: its long replies are dropped, each as
    a `degenerate_repetition` reject, and the same prompt sent directly loops by the rule."""
    from transformers import AutoTokenizer

    out, _ = quality_run
    kept = records(out / "loops")
    dropped = [r for r in rejects(out / "loops") if r["reason"] == "degenerate_repetition"]
    assert (
        dropped and len(kept) + len(dropped) == LOOP_ROWS
    )  # every row written, or recorded dropped
    assert not any("degenerate" in r["meta"] for r in kept)
    assert all(repetition(r["output_ids"]) is None for r in kept)
    manifest = json.loads((out / "loops" / "manifest.json").read_text())
    assert manifest["quality"]["degenerate_dropped"] == len(dropped)
    assert manifest["quality"]["degenerate"] == len(dropped)
    rows = {f"loops/l{i:03d}/0": row for i, row in enumerate(prompt_rows(LOOP_ROWS, "l"))}
    first = dropped[0]
    assert "caught in a loop" in first["detail"]
    tok = AutoTokenizer.from_pretrained(str(tiny_kimi))
    prompt = template_ids(tok, [{"role": "user", "content": rows[first["id"]]["prompt"]}])
    direct = direct_generate(sglang_server.url, prompt, LOOP_TOKENS)
    assert repetition(direct["output_ids"]) is not None
