"""Keys and fingerprints are persistent: existing caches and resumable outputs must keep matching.

The pinned values below were computed with the code as it was before the helpers were shared
(commit d58a07c); a change that alters any of them makes old cache entries unreachable.
"""

import ast
import hashlib

from fact_reasoner.cache import cache_key
from fact_reasoner.embeddings import model_fingerprint
from fact_reasoner.hashing import canonical_json, content_key, files_fingerprint, json_sha256
from fact_reasoner.io import content_key as io_content_key
from fact_reasoner.nli.align import shipped_align_model_path
from fact_reasoner.retrieval.cache import RetrievalCache
from tests.helpers import REPO_ROOT

PACKAGE = REPO_ROOT / "fact_reasoner"


def test_record_key_is_pinned():
    record = {"b": [1, 2.5, None], "a": "Zoë", "c": {"y": 1, "x": True}}
    assert content_key(record) == "d1c5ee509da8e8197f22"
    assert io_content_key is content_key  # the resume code still finds it where it was


def test_model_call_key_is_pinned():
    request = {"messages": [{"role": "user", "content": "Zoë é"}], "temperature": 0.0, "seed": 1}
    assert (
        cache_key("openai", "m-1", "nli-llm/v1", request)
        == "9e72a3158d1ee48c80cd8660201d4245e9031fe0613f0da97b3191bb05d2603a"
    )


def test_retrieval_keys_are_pinned():
    assert (
        RetrievalCache.key("bm25@abc", "Who is Zoë?", 3, "Zoë")
        == "326f2c665b76557f0ca905ce6e69ea6860bde87b29d8b6f885ccfdba88d216e5"
    )
    assert (
        RetrievalCache.key("bm25@abc", "Who is Zoë?", 3, None, "Zoë Q")
        == "e6c994ea9727cb763d35af3e1ecffcbd13d72788c59f0cf86ac83d05fb8f7733"
    )
    assert (
        RetrievalCache.response_key("https://x/search", {"q": "Zoë", "num": 3})
        == "cb3fb117581a5fdddf6113f71014cb04c8404b7e2c698fd2d98b0d1e8d1ee9b5"
    )


def test_model_fingerprints_of_the_shipped_models_are_pinned():
    assert model_fingerprint(PACKAGE / "models" / "nli-align") == "nli-align@2fb11572fc92f76f"
    assert model_fingerprint("some/hub-id") == "some/hub-id"  # not a folder: the name itself


def test_model_fingerprint_formula(tmp_path):
    # the shipped cross-encoder's weights change when it is retrained, so its fingerprint is not
    # pinned; the formula is: sha256 of config.json and the weight files, in name order
    folder = tmp_path / "my-model"
    folder.mkdir()
    (folder / "model.onnx").write_bytes(b"weights")
    (folder / "config.json").write_bytes(b"{}")
    (folder / "notes.txt").write_bytes(b"not hashed")
    (folder / "extra.safetensors").write_bytes(b"more")
    digest = hashlib.sha256(b"{}" + b"more" + b"weights").hexdigest()[:16]
    assert model_fingerprint(folder) == f"my-model@{digest}"


def test_align_fingerprint_is_pinned():
    # AlignNLI.model_id, taken from the helper it uses (building AlignNLI loads the embedder)
    from fact_reasoner.nli import align

    assert align._fingerprint(shipped_align_model_path()) == "nli-align@024e5f9d8590"


def test_canonical_json_ignores_dict_order_and_keeps_non_ascii():
    assert canonical_json({"b": 1, "a": "é"}) == '{"a":"é","b":1}'
    assert json_sha256({"b": 1, "a": "é"}) == json_sha256({"a": "é", "b": 1})


def test_files_fingerprint_reads_the_named_files_in_order(tmp_path):
    (tmp_path / "one").write_bytes(b"a" * 3_000_000)  # more than one read block
    (tmp_path / "two").write_bytes(b"b")
    forward = files_fingerprint(tmp_path, ["one", "two"], digits=8)
    assert forward.startswith(f"{tmp_path.name}@") and len(forward.split("@")[1]) == 8
    assert forward != files_fingerprint(tmp_path, ["two", "one"], digits=8)


def test_schema_does_not_import_io():
    """schema ← io was a cycle (io reads records into the schema; the schema asked io for keys)."""
    tree = ast.parse((PACKAGE / "schema.py").read_text())
    imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert "io" not in imported
