"""Tiny random-weight test models and offline tokenizers for a real SGLang server on CPU, built by
scripts/build_test_models.py (deterministically: fixed seeds, no network):

* ``tiny-kimi/``   byte-level BPE tokenizer whose special tokens carry Kimi-K2's real ids
                   (163584..163607, vocab 163840), a Kimi-K2-style chat template (tool_declare
                   turn with TypeScript-like tool signatures, tool-call section tokens, ``thinking``
                   kwarg) and a tiny LlamaForCausalLM whose EOS is ``<|im_end|>`` (163586).
* ``tiny-kimi-tiktoken/`` tiny-kimi's weights with a tokenizer loaded only through
                   ``trust_remote_code``: ``tokenization_tinykimi.py`` (this folder) wraps a
                   tiktoken BPE file (``tiktoken.model``, built here: base64 token + rank per line)
                   with Kimi's special ids, and hands the chat template a TypeScript-like tool
                   declaration it computes (``tools_ts_str``), as Kimi-K2.5's tokenizer does,
                   printing "Failed to convert tools to TypeScript style" and leaving the template
                   to declare them as JSON when a schema is beyond its converter. Its template
                   reads ``reasoning`` before ``reasoning_content``, prints string arguments
                   verbatim and names a turn by its ``name``. Needs tiktoken only to load.
* ``tiny-chatml/`` small byte-level BPE (256 bytes + merges) with ChatML specials, a Qwen3-style
                   template (``<tools>`` JSON, ``enable_thinking`` kwarg) and a tiny
                   Qwen2ForCausalLM whose EOS is ``<|im_end|>``.

One module a job: ``bpe`` (the vocabulary builder), ``templates`` (the chat templates),
``recipes`` (ids, sizes, seeds), ``weights`` (random weights that stop by themselves), one module
per model (``kimi``, ``kimi_tiktoken``, ``chatml``), ``samples`` (the sample conversation),
``checks`` and ``cli``. ``tokenization_tinykimi.py`` is shipped into a model directory and loaded
by transformers as remote code: it imports nothing of this repository, and ``bpe`` reads its byte
map from it.
"""
