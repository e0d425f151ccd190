"""Content written as several text parts reaches the template as SGLang's chat endpoint hands it
(generator/prompts/content_parts.py): joined with a space for a `string` template, as parts for
an `openai` one (tool messages joined all the same). The classification is checked against
SGLang's own function, and the prompt against the real CPU SGLang server's chat endpoint."""

from __future__ import annotations

import json
import subprocess
import urllib.request

import pytest
from transformers import AutoTokenizer

from draftgen.generator.prompts.content_parts import content_format
from draftgen.generator.prompts.samples import Sample
from draftgen.generator.rows.formats import parse_conversation
from draftgen.testing import families
from tests.conftest import SGLANG_VENV
from tests.generator.gen_helpers import write_jsonl

from .family_cases import example_job, run

PARTS = [{"type": "text", "text": "Why is"}, {"type": "text", "text": "the sky blue?"}]
TOOL_PARTS = [{"type": "text", "text": '{"temp_c":'}, {"type": "text", "text": "21}"}]
ROW = {
    "id": "parts",
    "messages": [
        {"role": "user", "content": PARTS},
        {"role": "assistant", "content": "Rayleigh scattering."},
        {"role": "user", "content": [{"type": "text", "text": "One part only."}]},
    ],
}
# A template that loops over a message's parts (SGLang: `openai`), printing them back to back.
LOOPING = (
    "{%- for message in messages -%}<{{ message.role }}>"
    "{%- if message.content is string -%}{{ message.content }}"
    "{%- else -%}{%- for part in message.content -%}{{ part.text }}{%- endfor -%}{%- endif -%}"
    "{%- endfor -%}{%- if add_generation_prompt -%}<assistant>{%- endif -%}"
)


def test_several_parts_stay_parts_and_one_part_is_its_text():
    conv = parse_conversation("messages", ROW)
    assert conv.messages[0]["content"] == PARTS
    assert conv.messages[2]["content"] == "One part only."


def _templates(tiny_kimi) -> dict[str, str]:
    tok_config = json.loads((tiny_kimi / "tokenizer_config.json").read_text())
    return {
        "qwen3": families.qwen3.TEMPLATE,
        "gpt-oss": families.gpt_oss.TEMPLATE,
        "llama-3.1": families.llama3.TEMPLATE,
        "tiny-kimi": tok_config["chat_template"],
        "looping": LOOPING,
        "sliced": LOOPING.replace("in message.content", "in message['content'][0:]"),
        "multimodal": LOOPING.replace("message.content -%}", "message.content -%}{# image #}"),
    }


def test_the_classification_is_sglangs(tiny_kimi):
    """The same answer as SGLang's `detect_jinja_template_content_format`, run in its own
    environment, for each family's template and the two shapes that matter."""
    python = SGLANG_VENV / "bin" / "python"
    if not python.exists():
        pytest.skip(f"{SGLANG_VENV} is missing: run `make sglang`")
    templates = _templates(tiny_kimi)
    code = (
        "import json, sys\n"
        "from sglang.srt.parser.jinja_template_utils import detect_jinja_template_content_format"
        " as f\n"
        "print(json.dumps({k: f(v) for k, v in json.load(sys.stdin).items()}))"
    )
    out = subprocess.run(
        [str(python), "-c", code],
        input=json.dumps(templates),
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    sglang = json.loads(out.stdout.strip().splitlines()[-1])
    ours = {k: content_format(v) for k, v in templates.items()}
    assert ours == sglang
    assert ours["qwen3"] == "string" and ours["looping"] == "openai"


@pytest.mark.parametrize(
    ("family", "example"), [("qwen3", "qwen3.yaml"), ("gpt-oss", "gpt-oss.yaml")]
)
def test_a_string_template_gets_the_parts_joined_with_a_space(
    family_tokenizer_dir, tmp_path, family, example
):
    write_jsonl(tmp_path / "rows.jsonl", [ROW])
    ds = {"name": "ds", "source": "rows.jsonl", "format": "messages", "turns": "all"}
    items = run(example_job(example, family_tokenizer_dir(family), [ds]), tmp_path)
    tok = AutoTokenizer.from_pretrained(family_tokenizer_dir(family))
    texts = [tok.decode(s.input_ids) for s in items if isinstance(s, Sample)]
    assert len(texts) == 2 and all("Why is the sky blue?" in t for t in texts)


def test_an_openai_template_gets_the_parts_and_a_tool_message_joined(kimi_like_dir, tmp_path):
    from tests.generator_input.tokenizer_fixture import build_tokenizer

    tok_dir = build_tokenizer(tmp_path / "looping", LOOPING)
    row = {
        "id": "t",
        "messages": [
            {"role": "user", "content": PARTS},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": TOOL_PARTS},
        ],
    }
    write_jsonl(tmp_path / "rows.jsonl", [row])
    from .conftest import make_job

    ds = {"name": "ds", "source": "rows.jsonl", "format": "messages"}
    job = make_job(tok_dir, [ds], generationPrefix=None, specialTokens=[])
    [sample] = run(job, tmp_path)
    text = AutoTokenizer.from_pretrained(tok_dir).decode(sample.input_ids)
    assert text == '<user>Why isthe sky blue?<assistant><tool>{"temp_c": 21}<assistant>'


@pytest.mark.sglang
def test_the_prompt_is_the_chat_endpoints_own(sglang_server, tiny_kimi, tmp_path):
    """tiny-kimi's server, asked through /v1/chat/completions with the same parts, builds the
    prompt ids draftgen sends."""
    from .conftest import make_job

    write_jsonl(tmp_path / "rows.jsonl", [ROW])
    ds = {"name": "ds", "source": "rows.jsonl", "format": "messages"}
    job = make_job(tiny_kimi, [ds], chatTemplateKwargs={"thinking": True})
    [sample] = run(job, tmp_path)
    body = {
        "model": "default",
        "messages": ROW["messages"],
        "max_tokens": 1,
        "temperature": 0,
        "chat_template_kwargs": {"thinking": True},
        "return_input_ids_in_sglext": True,
    }
    request = urllib.request.Request(
        sglang_server.url + "/v1/chat/completions",
        json.dumps(body).encode(),
        {"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=300) as resp:
        answer = json.loads(resp.read())
    sglext = answer.get("sglext") or answer["choices"][0].get("sglext") or {}
    assert sglext.get("input_ids") == sample.input_ids, answer
