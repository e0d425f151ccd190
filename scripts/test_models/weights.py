"""Random weights shaped so that generation ends by itself, and the model files around them.

The EOS logit is driven by a constant channel of the residual stream, so at temperature 1 EOS is
sampled with a per-step probability of a few percent that varies with the context (a heavy-ish
tailed spread of completion lengths), while greedy decoding is deterministic.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from .recipes import COMMON, RECIPES
from .samples import SAMPLE_TOOLS


def model_config(name: str, eos_id: int, bos_id: int | None) -> dict:
    r = RECIPES[name]
    cfg = {
        "architectures": [r["arch"]],
        "model_type": r["model_type"],
        "vocab_size": r["vocab_size"],
        "hidden_size": COMMON["hidden_size"],
        "intermediate_size": COMMON["intermediate_size"],
        "num_hidden_layers": COMMON["num_hidden_layers"],
        "num_attention_heads": COMMON["num_attention_heads"],
        "num_key_value_heads": COMMON["num_key_value_heads"],
        "max_position_embeddings": COMMON["max_position_embeddings"],
        "rms_norm_eps": COMMON["rms_norm_eps"],
        "rope_theta": COMMON["rope_theta"],
        "hidden_act": "silu",
        "tie_word_embeddings": False,
        "torch_dtype": "float32",
        "eos_token_id": eos_id,
        "bos_token_id": bos_id,
        "pad_token_id": None,
        "initializer_range": 0.02,
        "use_cache": True,
        # transformers >= 5 skips its Mistral-regex probe of local tokenizers when it sees this
        "transformers_version": "5.19.0",
    }
    if r["model_type"] == "llama":
        cfg.update({"attention_bias": False, "mlp_bias": False, "pretraining_tp": 1})
    else:
        cfg.update({"use_sliding_window": False, "sliding_window": None, "max_window_layers": 2})
    return cfg


def shape_weights(state: dict, name: str, seed: int) -> dict:
    """Deterministic random weights; each tensor from its own generator seeded by its name."""
    import torch

    r = RECIPES[name]
    out = {}
    for key in sorted(state):
        shape = tuple(state[key].shape)
        g = torch.Generator().manual_seed(
            seed + int(hashlib.sha256(key.encode()).hexdigest()[:8], 16)
        )
        if key.endswith("norm.weight") or key.endswith("layernorm.weight"):
            t = torch.ones(shape)
        elif key.endswith(".bias"):
            t = torch.randn(shape, generator=g) * 0.02
        elif key == "model.embed_tokens.weight":
            t = torch.randn(shape, generator=g) * r["emb_std"]
            t[:, 0] = r["emb_const"]
        elif key == "lm_head.weight":
            t = torch.randn(shape, generator=g)
            t[:, 0] = 0.0
        else:
            t = torch.randn(shape, generator=g) * r["layer_std"]
        out[key] = t.contiguous()
    return out


def calibrate_lm_head(weights: dict, name: str, eos_id: int, cfg_obj, cls) -> dict:
    """Shape lm_head so that generation ends by itself.

    Channel 0 of every embedding row is a constant, so after the final RMSNorm channel 0 is a
    nearly constant positive value. lm_head's column 0 is zero except in the EOS row, which turns
    that channel into an EOS bias. The other columns are scaled so that the non-EOS logits have
    std ``logit_std`` (a peaked distribution, so that greedy decoding seldom picks EOS), and the
    EOS row's own random part so that its logit varies with the context by ``eos_noise``. The
    bias is then set by bisection so that the median per-step EOS probability over random
    contexts is ``eos_rate``.
    """
    import torch

    r = RECIPES[name]
    model = cls(cfg_obj)
    model.load_state_dict(weights, strict=False)
    model.eval()
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(0, min(r["vocab_size"], 4096), (8, 64), generator=g)
    with torch.no_grad():
        h = model.model(input_ids=ids).last_hidden_state.reshape(-1, cfg_obj.hidden_size)
    w = weights["lm_head.weight"]
    rest_std = (h[:, 1:] @ w[:, 1:].T).std().item()
    w[:, 1:] *= r["logit_std"] / rest_std
    eos_rest = h[:, 1:] @ w[eos_id, 1:]
    w[eos_id, 1:] *= r["eos_noise"] / eos_rest.std().item()
    logits = h @ w.T
    logits[:, eos_id] = float("-inf")
    log_z_other = logits.logsumexp(-1)
    eos_base = h @ w[eos_id]
    c0 = h[:, 0]
    lo, hi = -50.0, 50.0
    for _ in range(60):
        mid = (lo + hi) / 2
        p = torch.sigmoid(eos_base + mid * c0 - log_z_other).median().item()
        lo, hi = (mid, hi) if p < r["eos_rate"] else (lo, mid)
    w[eos_id, 0] = (lo + hi) / 2
    # ids past the tokenizer (padding of the embedding matrix) are never sampled
    n_tok = r.get("tokenizer_size")
    if n_tok and n_tok < r["vocab_size"]:
        w[n_tok:, 0] = -100.0 / c0.mean().item()
    return weights


def build_model(out_dir: Path, name: str, eos_id: int, bos_id: int | None) -> None:
    import torch
    from safetensors.torch import save_file
    from transformers import AutoConfig, AutoModelForCausalLM

    cfg = model_config(name, eos_id, bos_id)
    (out_dir / "config.json").write_text(json.dumps(cfg, indent=2, sort_keys=True) + "\n")
    gen = {"eos_token_id": eos_id, "bos_token_id": bos_id, "do_sample": True, "temperature": 1.0}
    (out_dir / "generation_config.json").write_text(json.dumps(gen, indent=2) + "\n")
    cfg_obj = AutoConfig.from_pretrained(out_dir)
    with torch.device("meta"):
        skeleton = AutoModelForCausalLM.from_config(cfg_obj)
    cls = type(skeleton)
    state = {k: v for k, v in skeleton.state_dict().items() if "rotary" not in k}
    prompts = generation_prompts(out_dir, name)
    # Random weights can make the template's own generation prompt a context in which EOS wins
    # greedily (a one-token answer for every prompt). Try a few seeds, deterministically, and
    # keep the first whose greedy continuation of the sample prompts runs for a while.
    for attempt in range(32):
        seed = RECIPES[name]["seed"] + 7919 * attempt
        weights = shape_weights(state, name, seed)
        weights = calibrate_lm_head(weights, name, eos_id, cfg_obj, cls)
        if greedy_ok(weights, cfg_obj, cls, prompts, eos_id):
            break
    else:
        raise SystemExit(f"{name}: no seed gave a model that does not stop at once")
    save_file(weights, str(out_dir / "model.safetensors"), metadata={"format": "pt"})


def generation_prompts(out_dir: Path, name: str) -> list[list[int]]:
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(out_dir))
    kw = "thinking" if name == "tiny-kimi" else "enable_thinking"
    prompts = []
    for i, flag in enumerate([True, False, True]):
        msgs = [{"role": "user", "content": f"Question {i}: what is {i} times {i + 3}?"}]
        prompts.append(
            tok.apply_chat_template(
                msgs,
                tools=SAMPLE_TOOLS if i == 2 else None,
                add_generation_prompt=True,
                tokenize=True,
                return_dict=False,
                **{kw: flag},
            )
        )
    return prompts


def greedy_ok(weights, cfg_obj, cls, prompts, eos_id, steps: int = 48) -> bool:
    """Greedy decoding of the sample prompts runs `steps` tokens without EOS, and the first step
    at temperature 1 does not pick EOS with a high probability."""
    import torch

    model = cls(cfg_obj)
    model.load_state_dict(weights, strict=False)
    model.eval()
    with torch.no_grad():
        for p in prompts:
            ids = torch.tensor([p])
            first = model(ids).logits[0, -1].softmax(-1)[eos_id].item()
            if first > 0.05:
                return False
            out = model.generate(
                input_ids=ids,
                attention_mask=torch.ones_like(ids),
                max_new_tokens=steps,
                do_sample=False,
                eos_token_id=eos_id,
                pad_token_id=eos_id,
            )
            if eos_id in out[0, len(p) :].tolist():
                return False
    return True
