"""On-policy chains against the real CPU SGLang server (tiny-kimi: Kimi-K2's tokenizer and
template): each turn's prompt carries the previous turn's reply as the template puts it, a
`maxSamples` budget stops the dataset between chains, a tool call the model does not make ends
the chain recorded, and a chain cut by SIGKILL resumes at the turn it reached.

The random tiny model greedily starts every reply with the same few tokens; making them stop
tokens gives one-token replies that end with `stop`, so chains go on (a reply cut at
`maxNewTokens` ends its chain: `length`)."""

from __future__ import annotations

import json
import re
import signal
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
import pytest

from draftgen.cli import main
from draftgen.generator.prompts.chains import ChainState, ChainSteps, chain_row
from draftgen.generator.prompts.inputs import open_tokenizer
from draftgen.spec import load_job

from .gen_helpers import (
    WEATHER_TOOL,
    cli,
    generate_command,
    records,
    run_inprocess,
    write_job,
    write_jsonl,
)

pytestmark = pytest.mark.sglang

STOPS = [96266, 143061, 144279, 53360]  # what tiny-kimi says first, greedily
SAMPLING = {"temperature": 0.0, "maxNewTokens": 4, "stopTokenIds": STOPS}


def _conversation(i: int, turns: int = 3) -> dict:
    messages: list[dict] = []
    for t in range(turns):
        messages.append({"role": "user", "content": f"Question {t} of chat {i}?"})
        messages.append({"role": "assistant", "content": f"DATASET-REPLY-{i}-{t}"})
    return {"id": f"chat{i}", "messages": messages}


def _job(tmp_path: Path, model: Path, rows: list[dict], **dataset: object) -> Path:
    write_jsonl(tmp_path / "chats.jsonl", rows)
    ds = {
        "name": "chats",
        "source": "chats.jsonl",
        "format": "messages",
        "turns": "all",
        "history": "regenerated",
        **dataset,
    }
    return write_job(
        tmp_path,
        model,
        [ds],
        sampling=SAMPLING,
        generator={"concurrency": {"mode": "fixed", "maxRequests": 2}, "tokenizerWorkers": 1},
    )


def _generate(job: Path, out: Path, url: str) -> str:
    proc = cli(*generate_command(job, out, url))
    log, _ = proc.communicate(timeout=300)
    assert proc.returncode == 0, log[-3000:]
    return log


def _chains(recs: list[dict]) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for r in recs:
        out.setdefault(r["meta"]["chain"]["id"], []).append(r)
    return {k: sorted(v, key=lambda r: r["turn"]) for k, v in out.items()}


def _check_prompts(job_path: Path, rows: list[dict], recs: list[dict]) -> None:
    """Every turn k+1's prompt is what the template renders from the conversation with turns
    0..k replaced by the replies written for them (parsed back by the family's rules)."""
    job = load_job(job_path)
    by_id = {f"chats/{row['id']}": row for row in rows}
    with open_tokenizer(job, job_path.parent, workers=0) as ctx:
        steps = ChainSteps(ctx)
        for cid, turns in _chains(recs).items():
            row = by_id[cid]
            state = ChainState(chain_row(cid, row["messages"], row.get("tools")))
            for rec in turns:
                assert rec["turn"] == state.turn
                sample = steps.render("chats", 0, state, None)
                assert rec["input_ids"] == sample.input_ids, (cid, rec["turn"])  # type: ignore[union-attr]
                if rec["meta"].get("chain_end"):
                    break
                _, nxt = steps.advance(sample, rec["output_ids"], rec["finish_reason"], None)  # type: ignore[arg-type]
                state = nxt.chain  # type: ignore[union-attr]


def test_each_turn_is_prompted_by_the_targets_own_replies(tmp_path, tiny_kimi, sglang_server):
    rows = [_conversation(i) for i in range(3)]
    job = _job(tmp_path, tiny_kimi, rows)
    out = tmp_path / "out"
    _generate(job, out, sglang_server.url)
    recs = records(out / "chats")
    chains = _chains(recs)
    assert sorted(chains) == [f"chats/chat{i}" for i in range(3)]
    for cid, turns in chains.items():
        # Replies end with a stop token: every chain runs its three turns and ends complete.
        assert [r["turn"] for r in turns] == [0, 1, 2], cid
        assert [r["meta"].get("chain_end") for r in turns] == [None, None, "complete"]
        assert all(r["meta"]["chain"]["turns"] == 3 for r in turns)
    _check_prompts(job, rows, recs)
    # The dataset's own assistant text never reaches a prompt.
    with open_tokenizer(load_job(job), tmp_path, workers=0) as ctx:
        for r in recs:
            assert "DATASET-REPLY" not in ctx.tokenizer.decode(r["input_ids"])


def test_max_samples_stops_between_chains(tmp_path, tiny_kimi, sglang_server):
    rows = [_conversation(i) for i in range(4)]
    job = _job(tmp_path, tiny_kimi, rows, budget={"maxSamples": 7})
    out = tmp_path / "out"
    _generate(job, out, sglang_server.url)
    chains = _chains(records(out / "chats"))
    # Two whole chains (6 samples) fit; a third would need 3 more: none is started.
    assert len(chains) == 2
    assert all([r["turn"] for r in t] == [0, 1, 2] for t in chains.values())
    manifest = json.loads((out / "chats" / "manifest.json").read_text())
    assert manifest["samples"] == 6


def test_a_tool_call_the_model_does_not_make_ends_the_chain(
    tmp_path, tiny_kimi, sglang_server, capsys
):
    call = {
        "id": "functions.get_weather:0",
        "type": "function",
        "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
    }
    row = {
        "id": "agent",
        "tools": [WEATHER_TOOL],
        "messages": [
            {"role": "user", "content": "Weather in Paris?"},
            {"role": "assistant", "content": "", "tool_calls": [call]},
            {"role": "tool", "tool_call_id": call["id"], "content": "18C"},
            {"role": "assistant", "content": "It is 18C."},
        ],
    }
    job = _job(tmp_path, tiny_kimi, [row, _conversation(0, turns=2)])
    out = tmp_path / "out"
    _generate(job, out, sglang_server.url)
    chains = _chains(records(out / "chats"))
    [agent] = chains["chats/agent"]  # the tool result is never sent after a reply without a call
    assert (agent["turn"], agent["meta"]["chain_end"]) == (0, "no_tool_call")
    assert [r["meta"].get("chain_end") for r in chains["chats/chat0"]] == [None, "complete"]
    # How far the chains got, per dataset, in `draftgen stats`.
    assert main(["stats", "--json", str(out)]) == 0
    [ds] = json.loads(capsys.readouterr().out)["datasets"]
    assert ds["chains"] == {
        "started": 2,
        "turns_asked": 4,
        "turns_written": 3,
        "by_end": {"complete": 1, "no_tool_call": 1},
    }
    assert main(["stats", str(out)]) == 0
    text = capsys.readouterr().out
    assert "chats: 2 chains, 3 of 4 turns (75%); ended: complete 1, no_tool_call 1" in text


def _lines(directory: Path) -> int:
    return sum(len(p.read_bytes().splitlines()) for p in directory.glob("shard-*.jsonl"))


def test_a_chain_cut_by_sigkill_resumes_at_the_turn_it_reached(
    tmp_path, tiny_kimi, sglang_server, capsys
):
    rows = [_conversation(i, turns=4) for i in range(4)]
    job = _job(tmp_path, tiny_kimi, rows)
    out = tmp_path / "out"
    args = generate_command(job, out, sglang_server.url)
    proc = cli(*args)
    try:
        deadline = time.monotonic() + 240
        while proc.poll() is None and time.monotonic() < deadline:
            if _lines(out / "chats") >= 3:
                proc.send_signal(signal.SIGKILL)
                break
            time.sleep(0.02)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == -signal.SIGKILL
    before = records(out / "chats")
    cut = [t for t in _chains(before).values() if not t[-1]["meta"].get("chain_end")]
    assert cut, "the kill must leave a chain mid-way"
    assert main(["stats", "--json", str(out)]) == 0
    [ds] = json.loads(capsys.readouterr().out)["datasets"]
    assert ds["chains"]["by_end"]["cut"] == len(cut)  # started, not ended: cut by the kill
    _generate(job, out, sglang_server.url)
    after = records(out / "chats")
    ids = Counter(r["id"] for r in after)
    assert max(ids.values()) == 1  # no turn written twice
    assert {r["id"]: r for r in after if r["id"] in {b["id"] for b in before}} == {
        b["id"]: b for b in before
    }  # the turns written before stay as they were
    for turns in _chains(after).values():
        assert [r["turn"] for r in turns] == [0, 1, 2, 3]
        assert turns[-1]["meta"]["chain_end"] == "complete"
    # The resumed turns were prompted by the replies written before the kill.
    _check_prompts(job, rows, after)


def test_a_token_budget_ends_the_chains_going_and_a_raised_one_continues_them(
    tmp_path, tiny_kimi, sglang_server, capsys
):
    rows = [_conversation(i) for i in range(4)]
    out = tmp_path / "out"
    job = _job(tmp_path, tiny_kimi, rows, budget={"completionTokens": 4})
    _generate(job, out, sglang_server.url)
    first = records(out / "chats")
    assert 4 <= sum(r["completion_tokens"] for r in first) <= 5  # one-token replies
    chains = _chains(first)
    for turns in chains.values():
        assert [r["turn"] for r in turns] == list(range(len(turns)))
    cut = [cid for cid, t in chains.items() if not t[-1]["meta"].get("chain_end")]
    assert cut  # 3-turn chains cannot all finish in 4 tokens: those going end where they were
    assert main(["stats", "--json", str(out)]) == 0
    [ds] = json.loads(capsys.readouterr().out)["datasets"]
    assert ds["chains"]["by_end"].get("cut") == len(cut)

    # The budget raised (budgets are not in the fingerprint): the cut chains go on from the
    # turn they reached, and every chain finishes.
    job = _job(tmp_path, tiny_kimi, rows, budget={"completionTokens": 100})
    _generate(job, out, sglang_server.url)
    after = records(out / "chats")
    assert max(Counter(r["id"] for r in after).values()) == 1
    assert all(
        [r["turn"] for r in t] == [0, 1, 2] and t[-1]["meta"]["chain_end"] == "complete"
        for t in _chains(after).values()
    )
    assert len(_chains(after)) == 4
    _check_prompts(job, rows, after)


class _Forcing(httpx.AsyncHTTPTransport):
    """The network, except that a chain's first turn (a weather question, no tool result yet)
    is decoded under SGLang's constrained decoding (`regex`) to the call text `forced` gives
    for the question: a random model does not call tools by itself."""

    def __init__(self, tokenizer: Any, forced: dict[str, str]) -> None:
        super().__init__()
        self.tokenizer, self.forced = tokenizer, forced

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if request.url.path == "/generate":
            body = json.loads(request.content)
            text = self.tokenizer.decode(body.get("input_ids") or [])
            for question, reply in self.forced.items():
                if question in text and "RESULT" not in text:
                    body["sampling_params"]["regex"] = re.escape(reply)
                    body["sampling_params"]["max_new_tokens"] = 200
                    request = httpx.Request(
                        request.method,
                        request.url,
                        headers={k: v for k, v in request.headers.items() if k != "content-length"},
                        content=json.dumps(body).encode(),
                    )
        return await super().handle_async_request(request)


def _call_text(city: str) -> str:
    return (
        "I will look.</think>Checking.<|tool_calls_section_begin|><|tool_call_begin|>"
        f'functions.get_weather:0<|tool_call_argument_begin|>{{"city": "{city}"}}'
        "<|tool_call_end|><|tool_calls_section_end|>"
    )


def test_a_matching_tool_call_goes_on_with_the_datasets_result(tmp_path, tiny_kimi, sglang_server):
    call = {
        "id": "functions.get_weather:0",
        "type": "function",
        "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
    }

    def row(key: str, question: str) -> dict:
        return {
            "id": key,
            "tools": [WEATHER_TOOL],
            "messages": [
                {"role": "user", "content": question},
                {"role": "assistant", "content": "", "tool_calls": [call]},
                {"role": "tool", "tool_call_id": call["id"], "content": "RESULT-18C"},
                {"role": "assistant", "content": "It is 18C."},
            ],
        }

    rows = [row("same", "Weather in Paris?"), row("other", "Weather where I am?")]
    job = _job(tmp_path, tiny_kimi, rows)
    with open_tokenizer(load_job(job), tmp_path, workers=0) as ctx:
        tokenizer = ctx.tokenizer
    forced = {"Weather in Paris?": _call_text("Paris"), "Weather where I am?": _call_text("Lyon")}
    run_inprocess(job, sglang_server.url, tmp_path / "out", transport=_Forcing(tokenizer, forced))
    chains = _chains(records(tmp_path / "out" / "chats"))
    same, other = chains["chats/same"], chains["chats/other"]
    # The call matched the dataset's: turn 1 is prompted by the reply and the dataset's result.
    assert [(r["turn"], r["meta"].get("chain_end")) for r in same] == [(0, None), (1, "complete")]
    text = tokenizer.decode(same[1]["input_ids"])
    assert "Checking." in text and "RESULT-18C" in text and '{"city": "Paris"}' in text
    _check_prompts(job, rows, same)
    # Lyon is not the dataset's Paris: the chain ends at the call, the result never sent.
    assert [(r["turn"], r["meta"]["chain_end"]) for r in other] == [(0, "tool_call_diverged")]
