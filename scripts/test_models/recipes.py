"""What each test model is: its special tokens and their ids, its vocabulary, its architecture,
seed and logit shaping, and the shape every model shares."""

KIMI_SPECIALS = {
    163584: "[BOS]",
    163585: "[EOS]",
    163586: "<|im_end|>",
    163587: "<|im_user|>",
    163588: "<|im_assistant|>",
    163594: "<|im_system|>",
    163595: "<|tool_calls_section_begin|>",
    163596: "<|tool_calls_section_end|>",
    163597: "<|tool_call_begin|>",
    163598: "<|tool_call_argument_begin|>",
    163599: "<|tool_call_end|>",
    163601: "<|im_middle|>",
    163606: "<think>",
    163607: "</think>",
}
# Kimi-K2 pads its 256 special slots with <|reserved_token_N|>; we use the id as N.
KIMI_VOCAB = 163840

CHATML_NAMES = ["<|im_start|>", "<|im_end|>", "<think>", "</think>", "<tool_call>", "</tool_call>"]
CHATML_MERGES = 400
CHATML_MODEL_VOCAB = 768  # padded like Qwen's models: larger than the tokenizer

RECIPES = {
    "tiny-kimi": {
        "arch": "LlamaForCausalLM",
        "model_type": "llama",
        "vocab_size": KIMI_VOCAB,
        "eos_id": 163586,
        "bos_id": 163584,
        "seed": 20240601,
        **{"emb_const": 8.0, "emb_std": 0.5, "layer_std": 0.1},
        # logit shaping (see calibrate_lm_head)
        "logit_std": 4.0,
        "eos_rate": 0.008,
        "eos_noise": 0.5,
    },
    "tiny-chatml": {
        "arch": "Qwen2ForCausalLM",
        "model_type": "qwen2",
        "vocab_size": CHATML_MODEL_VOCAB,
        "seed": 20240602,
        **{"emb_const": 8.0, "emb_std": 0.5, "layer_std": 0.1},
        "logit_std": 5.0,
        "eos_rate": 0.006,
        "eos_noise": 0.3,
    },
}
COMMON = {
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "max_position_embeddings": 4096,
    "rms_norm_eps": 1e-6,
    "rope_theta": 10000.0,
}
