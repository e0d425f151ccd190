"""`draftgen generate` inside the image, as the chart runs it, against the real CPU SGLang server on
the host network: the job, datasets and tokenizer come from a read-only mount, the records go to
another, and they are exactly what the tokenizer and the server say."""

from __future__ import annotations

import pytest

from tests.generator.gen_helpers import generate_command, records

from .conftest import IN, OUT
from .jobs import copy_tokenizer, verify, write_job

pytestmark = [pytest.mark.image, pytest.mark.sglang, pytest.mark.timeout(1800)]


def test_generate_in_the_container_writes_verified_records(container, sglang_server, tiny_kimi):
    from transformers import AutoTokenizer

    copy_tokenizer(tiny_kimi, container.inputs / "tiny-kimi")
    write_job(container.inputs / "job-kimi", f"{IN}/job-kimi", f"{IN}/tiny-kimi")
    job, out = f"{IN}/job-kimi/job.yaml", f"{OUT}/kimi"
    run = container.exec("draftgen", *generate_command(job, out, sglang_server.url), check=False)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    verify(
        records(container.outputs / "kimi" / "chat"),
        AutoTokenizer.from_pretrained(str(tiny_kimi)),
        sglang_server.url,
    )


def test_remote_code_tiktoken_tokenizer_in_the_container(
    container, sglang_server, tiny_kimi_tiktoken
):
    """Kimi-K2.5's kind of tokenizer (remote code around tiktoken) loads and runs in the image."""
    from transformers import AutoTokenizer

    copy_tokenizer(tiny_kimi_tiktoken, container.inputs / "tiny-kimi-tiktoken")
    write_job(
        container.inputs / "job-tiktoken",
        f"{IN}/job-tiktoken",
        f"{IN}/tiny-kimi-tiktoken",
        model_extra={"trustRemoteCode": True},
    )
    job, out = f"{IN}/job-tiktoken/job.yaml", f"{OUT}/tiktoken"
    run = container.exec("draftgen", *generate_command(job, out, sglang_server.url), check=False)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    tok = AutoTokenizer.from_pretrained(str(tiny_kimi_tiktoken), trust_remote_code=True)
    recs = records(container.outputs / "tiktoken" / "chat")
    verify(recs, tok, sglang_server.url)
    with_tools = next(r for r in recs if r["id"] == "chat/w1/0")
    assert "type get_weather = (_: {" in tok.decode(with_tools["input_ids"])
