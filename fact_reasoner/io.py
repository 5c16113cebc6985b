"""Reading input records and writing results, at the edges of the program.

- :func:`read_rows` is the one row reader: JSONL (one value per line), a JSON file holding one
  value or a list (IBM's example files are pretty-printed JSON), or CSV (a header, then one row
  per record), each row with the file line it starts on.
- :func:`read_records` reads input records from those rows. A line that is not valid JSON
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
from .schema import Context, InputRecord, context_id


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
    """``field.path: message`` for each problem, e.g. ``atoms.3.text: Field required``; a
    problem of the whole record is its message alone (``no response to assess: …``), without
    pydantic's "Value error, " prefix."""
    parts = []
    for problem in error.errors():
        message = str(problem["msg"]).removeprefix("Value error, ")
        location = ".".join(str(x) for x in problem["loc"])
        parts.append(f"{location}: {message}" if location else message)
    return "; ".join(parts)


def _parse(path: str, line: int, data: Any) -> tuple[InputRecord, str] | RecordError:
    if not isinstance(data, dict):
        return RecordError(path, line, f"expected a JSON object, got {type(data).__name__}")
    try:
        return InputRecord.model_validate(data), content_key(data)
    except ValidationError as error:
        message = describe_validation_error(error)
        if "output" not in data and "atoms" not in data:  # likely other field names: show them
            message += f" (found: {', '.join(sorted(map(str, data))) or 'no fields'})"
        return RecordError(path, line, message)


@dataclass(frozen=True)
class RawRow:
    """One input row as read (a JSON value, or a CSV row as a dict of its cells) and where it
    came from: ``line`` is the file line it starts on; ``element`` its position in a JSON list
    when several elements share that line."""

    path: str
    line: int
    data: Any
    element: int | None = None

    def error(self, message: str) -> RecordError:
        """A :class:`RecordError` at this row (naming the list element when the line is shared)."""
        return RecordError(self.path, self.line, self.where() + message)

    def where(self) -> str:
        """``element <i> of the list: `` when the line is shared by several elements, else ``''``."""
        return f"element {self.element} of the list: " if self.element is not None else ""


#: CSV cells read as missing values, not as text (what pandas and spreadsheets write for none)
MISSING_CSV_CELLS = frozenset({"", "nan", "none", "null"})


def read_rows(path: str | Path) -> Iterator[RawRow | RecordError]:
    """Yield each row of ``path`` with its line, or an error naming file and line.

    JSONL (one value per line), JSON (one value, or a list: one row per element) and CSV (a
    header, then one row per record: cells ``NaN``/``nan``/``None``/``null`` and empty cells
    become ``None``; ``line`` is the file line the row starts on). Lines are decoded one by
    one: a line that is not UTF-8 is reported (file:line) and the others are read; a UTF-8
    byte-order mark is accepted. A missing file, a directory or an empty file raise
    :class:`InputError`.
    """
    path = Path(path)
    name = str(path)
    if not path.exists():
        raise InputError(f"input file not found: {name}")
    if path.is_dir():
        raise InputError(f"{name} is a directory, not an input file")
    data = _without_bom(path.read_bytes())
    if not data.strip():
        raise InputError(f"input file {name} is empty: nothing to assess")
    if path.suffix.lower() == ".csv":
        yield from _csv_rows(name, data)
        return
    yield from _json_values(name, data, json_file=path.suffix == ".json")


def numbered_keys() -> Any:
    """A function giving each row's resume key: its content key (:func:`content_key`) plus its
    occurrence number, so two identical rows in one file are both processed."""
    occurrences: Counter[str] = Counter()

    def key(data: dict[str, Any]) -> str:
        base = content_key(data)
        occurrences[base] += 1
        return f"{base}#{occurrences[base]}"

    return key


def read_records(path: str | Path) -> Iterator[NumberedRecord | RecordError]:
    """Yield each record of ``path`` (JSONL, JSON or CSV) or an error naming file, line and field.

    Rows come from :func:`read_rows`; resume keys from :func:`numbered_keys` (the record's
    content key plus its occurrence number, so two identical records in one file are both
    processed). A missing file, a directory or an empty file raise :class:`InputError`.
    """
    key = numbered_keys()
    for row in read_rows(path):
        if isinstance(row, RecordError):
            yield row
            continue
        parsed = _parse(row.path, row.line, row.data)
        if isinstance(parsed, RecordError):
            yield row.error(parsed.message)
            continue
        yield NumberedRecord(row.path, row.line, key(row.data), parsed[0])


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
        row = item.data
        if not isinstance(row, dict):
            raise InputError(item.where() + "expected a JSON object with a `text`", path=name, line=item.line)
        try:
            contexts.append(Context.model_validate({"id": row.get("id", context_id(position)), **row}))
        except ValidationError as error:
            raise InputError(item.where() + describe_validation_error(error), path=name, line=item.line) from None
    return contexts


def read_json_values(path: str | Path) -> Iterator[RawRow | RecordError]:
    """Each top-level value of a JSONL file, or each element of a JSON list (a ``.json`` file
    holding one value gives that value), with the line it starts on; a part that cannot be
    decoded is a :class:`RecordError` naming file and line, and reading goes on (the rules of
    :func:`read_rows`). An empty file gives nothing. For the files that are not records: a
    corpus (``fact-reasoner index``), result files (``fact-reasoner report``)."""
    path = Path(path)
    data = _without_bom(path.read_bytes())
    if not data.strip():
        return
    yield from _json_values(str(path), data, json_file=path.suffix.lower() == ".json")


def _without_bom(data: bytes) -> bytes:
    return data[len(codecs.BOM_UTF8) :] if data.startswith(codecs.BOM_UTF8) else data


def _json_values(name: str, data: bytes, *, json_file: bool) -> Iterator[RawRow | RecordError]:
    """Each top-level value of a JSON/JSONL file as a :class:`RawRow` (the line it starts on),
    or a :class:`RecordError` for a part that cannot be decoded.

    A ``.json`` file (``json_file``), or one that starts with ``[``, is first read whole: a list
    gives its elements (naming the element when several share a line), anything else the one
    value; a ``.json`` file that is really JSONL (its whole text is not one JSON value but it
    starts with ``{``) is read as JSONL. JSONL gives one value per non-blank line; a line that
    is not UTF-8 or not JSON is reported and the next line is read.
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
            if not isinstance(whole, list):
                yield RawRow(name, 1, whole)
                return
            starts = _item_start_lines(text, len(whole))
            shared = {line for line, count in Counter(starts).items() if count > 1}
            for position, (line, item) in enumerate(zip(starts, whole), start=1):
                yield RawRow(name, line, item, position if line in shared else None)
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
            yield RawRow(name, number, json.loads(raw))
        except json.JSONDecodeError as error:
            yield RecordError(name, number, f"invalid JSON at column {error.colno}: {error.msg}")


def _csv_rows(name: str, data: bytes) -> Iterator[RawRow | RecordError]:
    """The rows of a CSV file as dicts (header = keys). Bytes that are not UTF-8 are kept as
    surrogates while parsing, so only the rows holding them are reported."""
    import csv
    import io as text_io

    text = data.decode("utf-8", errors="surrogateescape")
    reader = csv.reader(text_io.StringIO(text, newline=""))
    try:
        header = next(reader)
    except (StopIteration, csv.Error) as error:
        raise InputError(f"no CSV header ({error})", path=name, line=1) from None
    if any(_has_surrogates(cell) for cell in header):
        raise InputError("the CSV header is not valid UTF-8", path=name, line=1)
    header = [cell.strip() for cell in header]
    line = reader.line_num + 1
    while True:
        try:
            cells = next(reader)
        except StopIteration:
            return
        except csv.Error as error:
            yield RecordError(name, line, f"unreadable CSV row: {error}")
            line = reader.line_num + 1
            continue
        start, line = line, reader.line_num + 1
        if not any(cell.strip() for cell in cells):
            continue
        bad = next((cell for cell in cells if _has_surrogates(cell)), None)
        if bad is not None:
            byte = next(ord(ch) - 0xDC00 for ch in bad if 0xDC80 <= ord(ch) <= 0xDCFF)
            yield RecordError(name, start, f"not valid UTF-8 (byte {byte:#04x})")
            continue
        if len(cells) > len(header):
            yield RecordError(name, start, f"{len(cells)} cells for {len(header)} columns")
            continue
        row = {key: (None if cell.strip().lower() in MISSING_CSV_CELLS else cell) for key, cell in zip(header, cells)}
        yield RawRow(name, start, row)


def _has_surrogates(text: str) -> bool:
    return any(0xDC80 <= ord(ch) <= 0xDCFF for ch in text)


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


def write_errors(path: Path, failures: list[RecordError]) -> None:
    """A run's failed records as JSON lines ``{path, line, message}``; no file when none failed."""
    if not failures:
        path.unlink(missing_ok=True)
        return
    with open(path, "w", encoding="utf-8") as handle:
        for failure in failures:
            handle.write(dumps_line({"path": failure.path, "line": failure.line, "message": failure.message}))


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
    file keeps the holder's pid for the message and is removed when the run ends; the lock
    itself goes with the process (also when it is killed), so a stale lock file never blocks a
    later run.

    Removing the file is safe against a run that opened it just before: a run that gets the
    lock checks that the path still names the file it locked, and opens it afresh if not.
    """

    def __init__(self, output: Path):
        self.path = output.with_name(output.name + ".lock")
        self._fd: int | None = None
        try:
            import fcntl
        except ImportError:  # pragma: no cover - not on POSIX: no locking
            return
        while True:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                holder = os.pread(fd, 64, 0).decode("ascii", "replace").strip() or "unknown"
                os.close(fd)
                from .errors import OutputLocked

                raise OutputLocked(
                    f"{output} is being written by another run (pid {holder}); wait for it to finish, "
                    "or write to another --output-dir / --output-file"
                ) from None
            if self._names(fd):
                break
            os.close(fd)  # the holder removed the file between our open and our lock: again
        self._fd = fd
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)

    def _names(self, fd: int) -> bool:
        """Whether the lock file's path still names the file open as ``fd``."""
        try:
            return os.stat(self.path).st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:
            return False

    def release(self) -> None:
        if self._fd is not None:
            if self._names(self._fd):
                self.path.unlink(missing_ok=True)  # removed while still held: see the class docstring
            os.close(self._fd)  # closing the descriptor releases the flock
            self._fd = None


class ResultWriter:
    """Append-only JSONL output that survives interruption and supports resuming.

    Each line is written with a single ``write`` of the whole line, then flushed and fsynced.
    If the process dies mid-write, the torn tail is cut off the next time the file is opened.

    A file this writer created and left empty (no row was written: every record failed, or the
    run stopped first) is removed when it closes, so that a failed run leaves no empty output
    behind (``created`` says whether it made the file; ``exists`` after closing, whether it is
    there); a file that was there when it opened (a resumed run) is never removed.
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
            self.created = not self.path.exists()
            self.done: dict[str, dict] = {}
            self._in_write = False
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
        self._in_write = True  # stays set if an interrupt lands mid-write (see close)
        self._handle.write(line)
        self._handle.flush()
        os.fsync(self._handle.fileno())
        if self.key_field in row:
            self.done[row[self.key_field]] = json.loads(line)
        self._in_write = False

    def close(self) -> None:
        if not self._handle.closed:
            self._handle.close()
            if self._in_write:
                # interrupted between writing a line and recording it: ``done`` is what the
                # file holds (what a rerun will skip), read back while the lock is still held
                self.done = {}
                self._load_and_repair()
            if self.created and self.path.stat().st_size == 0:
                self.path.unlink()  # nothing was written: no empty output left behind
        self._lock.release()

    @property
    def exists(self) -> bool:
        """Whether the output file is there (after :meth:`close`: it was not removed as empty)."""
        return self.path.exists()

    def __enter__(self) -> "ResultWriter":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class InOrderWriter:
    """Writes rows through a :class:`ResultWriter` in input order when they finish out of order
    (Ray workers): the row of position *i* is written once every earlier position is done
    (``None`` marks a position with no row: a failed one). :meth:`flush` writes whatever is
    held, in order, when the run stops early, so a computed row is never lost."""

    def __init__(self, writer: ResultWriter) -> None:
        self.writer = writer
        self._held: dict[int, dict | None] = {}
        self._next = 0

    def put(self, position: int, row: dict | None) -> None:
        self._held[position] = row
        while self._next in self._held:
            ready = self._held.pop(self._next)
            if ready is not None:
                self.writer.write(ready)
            self._next += 1

    def flush(self) -> None:
        for position in sorted(self._held):
            ready = self._held.pop(position)
            if ready is not None:
                self.writer.write(ready)
