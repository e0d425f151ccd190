"""Run by the trainers' environment (.cache/venv-trainers), not by pytest: SpecForge 0.2's own
prompt preparation over a draftgen export, as its training entry does it.

    python specforge_loader.py OUT.json [--tokenizer DIR] CONFIG.yaml [CONFIG.yaml ...]

`specforge train CONFIG.yaml` validates the run config (`specforge.config.load_config`), resolves
the algorithm (`training.strategy`) and, for online training, prepares the prompts with
`specforge.training.assembly._prepare_prompts` before it starts the SGLang capture and the
trainer. This runs exactly those steps and stops there: what follows needs GPUs, an SGLang
capture server and a Mooncake store. With `data.prompts_path` no tokenizer is used; with
`data.train_data_path` SpecForge renders and tokenizes the conversations with the tokenizer.
OUT.json holds, per config, the prompts' `input_ids` and `loss_mask` in the order SpecForge
yields them (several configs share one start-up of torch and transformers).
"""

import argparse
import json
from pathlib import Path

from specforge.algorithms.builtin import builtin_algorithm_registry
from specforge.config import load_config
from specforge.training.assembly import _prepare_prompts


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("out", type=Path)
    parser.add_argument("--tokenizer")
    parser.add_argument("configs", nargs="+")
    args = parser.parse_args()
    tokenizer = None
    if args.tokenizer:
        from transformers import AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(args.tokenizer)
    args.out.write_text(json.dumps([load(config, tokenizer) for config in args.configs]))


def load(config: str, tokenizer) -> dict:
    cfg = load_config(config)
    algorithm = builtin_algorithm_registry().resolve(cfg.training.strategy)
    prompts = _prepare_prompts(cfg, tokenizer, algorithm=algorithm, draft_config=None)
    rows = []
    for prompt in prompts:
        payload = prompt["payload"]
        ids, mask = payload["input_ids"], payload["loss_mask"]
        rows.append(
            {
                "input_ids": ids.tolist() if hasattr(ids, "tolist") else list(ids),
                "loss_mask": mask.tolist() if hasattr(mask, "tolist") else list(mask),
            }
        )
    return {"mode": cfg.mode, "rows": rows}


if __name__ == "__main__":
    main()
