"""Keys and fingerprints: SHA-256 of canonical JSON, and of a model folder's files.

Every persistent key of the package is made here, so that the model-call cache, the retrieval
cache and the resume key of a record cannot drift apart in how they write their JSON. The
exact bytes hashed are part of each key's contract: a changed separator or key order would
silently make every existing cache entry and every resumable output unreachable, so the
callers pass the separators their keys were first written with (tests pin known values).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

#: ``json.dumps`` without spaces: the model-call cache and the record keys
COMPACT_SEPARATORS = (",", ":")
#: ``json.dumps``'s own default: the retrieval cache's keys were first written with it
SPACED_SEPARATORS = (", ", ": ")

#: files read at a time while hashing weights (they can be hundreds of MB)
_BLOCK_BYTES = 1 << 20


def canonical_json(value: Any, *, separators: tuple[str, str] = COMPACT_SEPARATORS) -> str:
    """JSON with sorted keys and non-ASCII characters kept as they are: the same value gives the
    same text whatever the dict order."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=separators)


def json_sha256(value: Any, *, separators: tuple[str, str] = COMPACT_SEPARATORS) -> str:
    """The SHA-256 (hex) of :func:`canonical_json` of ``value``, encoded as UTF-8."""
    return hashlib.sha256(canonical_json(value, separators=separators).encode("utf-8")).hexdigest()


def content_key(data: dict[str, Any]) -> str:
    """A key of a whole input record (every field, canonical JSON): a record whose atoms,
    contexts, relations or any other field changed gets a new key, so a resumed run never
    keeps a result made from the old record. 20 hex digits: the length written in outputs."""
    return json_sha256(data)[:20]


def files_fingerprint(folder: Path, names: Iterable[str], digits: int) -> str:
    """``<folder name>@<first digits of the SHA-256 of the named files, in the given order>``.

    Identifies a model by its bytes rather than its path, so a cache keyed by it is never
    answered by other weights that happen to sit in a folder of the same name.
    """
    digest = hashlib.sha256()
    for name in names:
        with open(folder / name, "rb") as handle:
            for block in iter(lambda: handle.read(_BLOCK_BYTES), b""):
                digest.update(block)
    return f"{folder.name}@{digest.hexdigest()[:digits]}"
