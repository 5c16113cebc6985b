"""experiments/nli_speed.py's per-item-scales graph: a shipped dynamic int8 judge run in
batches, each item quantised over its own tokens, gives every item the logits it gets alone
from the graph as written (bit for bit), whatever it is batched with."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from experiments.nli_speed import run, shuffled, variants  # noqa: E402
from tests.nli.shipped_models import INT8_MODELS, PAIRS  # noqa: E402


@pytest.mark.parametrize("folder", INT8_MODELS, ids=lambda folder: folder.name)
def test_per_item_scales_give_each_item_its_own_numbers_in_any_batch(folder, tmp_path):
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    tokenizer.enable_truncation(max_length=128)
    encodings = tokenizer.encode_batch(PAIRS)
    models = variants(folder, None, tmp_path)
    alone = run(models["as written"][0], encodings, [[i] for i in range(len(PAIRS))])
    per_item, batched = models["per-item scales"]
    assert batched
    for size, seed in ((len(PAIRS), 0), (5, 1), (2, 2)):
        assert np.array_equal(run(per_item, encodings, shuffled(len(PAIRS), size, seed)), alone), size
    # what the per-item scales replace: the graph as written shares one scale across a batch
    assert not np.array_equal(run(models["as written"][0], encodings, shuffled(len(PAIRS), 5, 1)), alone)
