"""Run by the trainers' environment (.cache/venv-trainers), not by pytest: speculators 0.9's own
training loader over a dataset its `speculators prepare-data` wrote from a draftgen export.

    python speculators_loader.py PREPARED_DIR OUT.json

`ArrowDataset` serves each row with the target model's hidden states, which vLLM's capture
writes as `hidden_states/hs_<i>.safetensors` (hs-connectors' FileTransfer layout: the token ids
it ran and one state per layer). No vLLM runs here, so this writes those files the way the
capture does, from the row's own ids, with zero states; everything else is speculators' code:
`ArrowDataset` (its token-id check against the dataset row, the loss mask it serves) and
`CollateFn` (packing rows into one sequence with document ids). OUT.json holds what they
returned, for the pytest side to compare with draftgen's records.
"""

import json
import sys
from pathlib import Path

import torch
from datasets import load_from_disk
from safetensors.torch import save_file
from speculators.train.data import ArrowDataset, CollateFn

HIDDEN_SIZE = 8
AUX_LAYERS = 3  # EAGLE-3's three target layers; the capture adds the last layer after them


def main() -> None:
    prepared, out = Path(sys.argv[1]), Path(sys.argv[2])
    data = load_from_disk(str(prepared)).with_format("torch")
    states = prepared / "hidden_states"
    states.mkdir(exist_ok=True)
    for index in range(len(data)):
        ids = data[index]["input_ids"]
        save_file(
            {
                "token_ids": ids,
                "hidden_states": torch.zeros(len(ids), AUX_LAYERS + 1, HIDDEN_SIZE),
            },
            str(states / f"hs_{index}.safetensors"),
        )
    total = int(sum(data.with_format(None)["seq_len"]))
    dataset = ArrowDataset(max_len=total, datapath=str(prepared), on_missing="raise")
    items = [dataset[i] for i in range(len(dataset))]
    batch = CollateFn(max_len=total, hidden_size=HIDDEN_SIZE, num_target_layers=AUX_LAYERS)(items)
    result = {
        "rows": [
            {
                "input_ids": item["input_ids"].tolist(),
                "loss_mask": item["loss_mask"].tolist(),
                "lengths": item["lengths"].tolist(),
            }
            for item in items
        ],
        "packed": {
            "input_ids": batch["input_ids"][0].tolist(),
            "loss_mask": batch["loss_mask"][0].tolist(),
            "document_ids": batch["document_ids"][0].tolist(),
            "hidden_states_shape": list(batch["hidden_states"].shape),
        },
    }
    out.write_text(json.dumps(result))


if __name__ == "__main__":
    main()
