"""Reading input records and writing results, at the edges of the program.

- :func:`read_records` reads JSONL (one record per line) or a JSON file holding one record or a
  list of records (IBM's example files are pretty-printed JSON). A line that is not valid JSON
  or not a valid record becomes a :class:`RecordError` naming the file, the line and the
  field, and reading goes on. :func:`read_contexts` reads ``--contexts`` files the same way
  but stops at the first passage it cannot read (:class:`~fact_reasoner.errors.InputError`).
- :class:`ResultWriter` appends one JSON line per finished record, flushed and fsynced, so an
  interrupted run keeps everything written; on reopening it repairs a torn last line and
  reports the keys already done, so a rerun skips them.
"""

from __future__ import annotations

import codecs
import json
import os
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from .errors import InputError, OutputError
from .hashing import content_key
from .json_safe import json_safe
from .schema import Context, InputRecord


@dataclass(frozen=True)
class RecordError:
    """An input record that could not be read."""

    path: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.message}"


@dataclass(frozen=True)
class NumberedRecord:
    """A valid record, where it came from, and its resume key."""

    path: str
    line: int
    key: str
    record: InputRecord


def describe_validation_error(error: ValidationError) -> str:
    """``field.path: message`` for each problem, e.g. ``atoms.3.text: Field required``."""
    parts = []
    for problem in error.errors():
        location = ".".join(str(x) for x in problem["loc"]) or "record"
        parts.append(f"{location}: {problem['msg']}")
    return "; ".join(parts)


def _parse(path: str, line: int, data: Any) -> tuple[InputRecord, str] | RecordError:
    if not isinstance(data, dict):
        return RecordError(path, line, f"expected a JSON object, got {type(data).__name__}")
    try:
        return InputRecord.model_validate(data), content_key(data)
    except ValidationError as error:
        return RecordError(path, line, describe_validation_error(error))


def read_records(path: str | Path) -> Iterator[NumberedRecord | RecordError]:
    """Yield each record of ``path`` (JSONL or JSON) or an error naming file, line and field.

    Resume keys are the record's content key (:func:`content_key`) plus its occurrence number,
    so two identical records in one file are both processed. Lines are decoded one by one: a
    line that is not UTF-8 is reported (file:line) and the others are read; a UTF-8 byte-order
    mark is accepted. A missing file, a directory or an empty file raise :class:`InputError`.
    """
    path = Path(path)
    name = str(path)
    if not path.exists():
        raise InputError(f"input file not found: {name}")
    if path.is_dir():
        raise InputError(f"{name} is a directory, not an input file (give a .jsonl or .json file)")
    data = _without_bom(path.read_bytes())
    if not data.strip():
        raise InputError(f"input file {name} is empty: nothing to assess")
    occurrences: Counter[str] = Counter()
    for item in _json_values(name, data, json_file=path.suffix == ".json"):
        if isinstance(item, RecordError):
            yield item
            continue
        line, value = item
        parsed = _parse(name, line, value)
        if isinstance(parsed, RecordError):
            yield parsed
            continue
        record, base = parsed
        occurrences[base] += 1
        yield NumberedRecord(name, line, f"{base}#{occurrences[base]}", record)


def read_contexts(path: str | Path) -> list[Context]:
    """The evidence passages of ``--contexts``: JSONL, or a JSON list, of ``{id?, title?, text}``.

    Read like :func:`read_records` (same JSON/JSONL rules, byte-order mark, line numbers), but a
    passage that cannot be read raises :class:`InputError` at once, naming file and line: a
    single assessment with part of its evidence missing would be a different assessment. A
    passage without an ``id`` gets ``c<i>``, ``i`` its 0-based position; an empty file gives
    no passages.
    """
    path = Path(path)
    name = str(path)
    data = _without_bom(path.read_bytes())
    contexts = []
    for position, item in enumerate(_json_values(name, data, json_file=path.suffix == ".json")):
        if isinstance(item, RecordError):
            raise InputError(item.message, path=name, line=item.line)
        line, row = item
        if not isinstance(row, dict):
            raise InputError("expected a JSON object with a `text`", path=name, line=line)
        try:
            contexts.append(Context.model_validate({"id": row.get("id", f"c{position}"), **row}))
        except ValidationError as error:
            raise InputError(describe_validation_error(error), path=name, line=line) from None
    return contexts


def _without_bom(data: bytes) -> bytes:
    return data[len(codecs.BOM_UTF8) :] if data.startswith(codecs.BOM_UTF8) else data


def _json_values(name: str, data: bytes, *, json_file: bool) -> Iterator[tuple[int, Any] | RecordError]:
    """Each top-level value of a JSON/JSONL file with the line it starts on, or a
    :class:`RecordError` for a part that cannot be decoded.

    A ``.json`` file (``json_file``), or one that starts with ``[``, is first read whole: a list
    gives its elements, anything else the one value; a ``.json`` file that is really JSONL (its
    whole text is not one JSON value but it starts with ``{``) is read as JSONL. JSONL gives
    one value per non-blank line; a line that is not UTF-8 or not JSON is reported and the
    next line is read.
    """
    stripped = data.lstrip()
    if json_file or stripped.startswith(b"["):
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as error:
            line = data.count(b"\n", 0, error.start) + 1
            yield RecordError(name, line, f"not valid UTF-8 (byte {data[error.start]:#04x} at offset {error.start})")
            return
        try:
            whole = json.loads(text)
        except json.JSONDecodeError as error:
            if json_file and not stripped.startswith(b"{"):
                yield RecordError(name, error.lineno, f"invalid JSON: {error.msg}")
                return
            whole = None  # a .json file that is really JSONL: fall through
        if whole is not None:
            items = whole if isinstance(whole, list) else [whole]
            starts = _item_start_lines(text, len(items)) if isinstance(whole, list) else [1]
            yield from zip(starts, items)
            return
    for number, raw_bytes in enumerate(data.split(b"\n"), start=1):
        if not raw_bytes.strip():
            continue
        try:
            raw = raw_bytes.decode("utf-8")
        except UnicodeDecodeError as error:
            yield RecordError(
                name, number, f"not valid UTF-8 (byte {raw_bytes[error.start]:#04x} at column {error.start + 1})"
            )
            continue
        try:
            value = json.loads(raw)
        except json.JSONDecodeError as error:
            yield RecordError(name, number, f"invalid JSON at column {error.colno}: {error.msg}")
            continue
        yield number, value


def _item_start_lines(text: str, count: int) -> list[int]:
    """Line numbers where each top-level item of a JSON list starts (for error messages)."""
    decoder = json.JSONDecoder()
    index = text.index("[") + 1
    lines = []
    for _ in range(count):
        while text[index] in " \t\r\n,":
            index += 1
        lines.append(text.count("\n", 0, index) + 1)
        _, index = decoder.raw_decode(text, index)
    return lines


def _json_default(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if hasattr(value, "tolist"):
        return value.tolist()
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"cannot serialise {type(value).__name__}")


def dumps_line(data: dict) -> str:
    """One JSON line; NaN becomes null so every line is strict JSON."""
    return json.dumps(json_safe(data), default=_json_default, ensure_ascii=False) + "\n"


class _OutputLock:
    """An exclusive ``flock`` on ``<output>.lock`` for as long as a run writes the output.

    A second run on the same output is refused at once instead of interleaving lines. The lock
    file keeps the holder's pid for the message; the lock itself goes with the process (also
    when it is killed), so a stale lock file never blocks a later run.
    """

    def __init__(self, output: Path):
        self.path = output.with_name(output.name + ".lock")
        self._fd: int | None = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            import fcntl
        except ImportError:  # pragma: no cover - not on POSIX: no locking
            return
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            holder = os.pread(self._fd, 64, 0).decode("ascii", "replace").strip() or "unknown"
            os.close(self._fd)
            self._fd = None
            from .errors import OutputLocked

            raise OutputLocked(
                f"{output} is being written by another run (pid {holder}); wait for it to finish, "
                "or write to another --output-dir / --output-file"
            ) from None
        os.ftruncate(self._fd, 0)
        os.pwrite(self._fd, str(os.getpid()).encode(), 0)

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the descriptor releases the flock
            self._fd = None


class ResultWriter:
    """Append-only JSONL output that survives interruption and supports resuming.

    Each line is written with a single ``write`` of the whole line, then flushed and fsynced.
    If the process dies mid-write, the torn tail is cut off the next time the file is opened.
    """

    def __init__(self, path: str | Path, key_field: str = "record_key", overwrite: bool = False):
        self.path = Path(path)
        self.key_field = key_field
        if self.path.is_dir():
            raise OutputError(f"{self.path} is a directory, not an output file")
        if self.path.parent.exists() and not self.path.parent.is_dir():
            raise OutputError(f"{self.path.parent} is a file, not a directory for the output")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = _OutputLock(self.path)  # one writer per output file
        try:
            if overwrite and self.path.exists():
                self.path.unlink()
            self.done: dict[str, dict] = {}
            self.repaired = self._load_and_repair()
            self._handle = open(self.path, "a", encoding="utf-8")
        except BaseException:
            self._lock.release()
            raise

    def _load_and_repair(self) -> bool:
        if not self.path.exists():
            return False
        data = self.path.read_bytes()
        good_end = 0
        position = 0
        while position < len(data):
            newline = data.find(b"\n", position)
            if newline < 0:
                break  # a line without its newline was torn by an interruption
            raw = data[position:newline]
            try:
                row = json.loads(raw) if raw.strip() else None
            except json.JSONDecodeError:
                if data[newline + 1 :].strip():
                    line = data.count(b"\n", 0, position) + 1
                    raise OutputError(
                        "not valid JSON and not the last line; the output file was edited or "
                        "corrupted — fix it or choose another output",
                        path=self.path,
                        line=line,
                    ) from None
                break
            if row is not None and self.key_field in row:
                self.done[row[self.key_field]] = row
            position = newline + 1
            good_end = position
        if good_end < len(data):
            with open(self.path, "r+b") as handle:
                handle.truncate(good_end)
            return True
        return False

    def __contains__(self, key: str) -> bool:
        return key in self.done

    def write(self, row: dict) -> None:
        line = dumps_line(row)
        self._handle.write(line)
        self._handle.flush()
        os.fsync(self._handle.fileno())
        if self.key_field in row:
            self.done[row[self.key_field]] = json.loads(line)

    def close(self) -> None:
        if not self._handle.closed:
            self._handle.close()
        self._lock.release()

    def __enter__(self) -> "ResultWriter":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
