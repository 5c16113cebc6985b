"""``--config FILE.toml``: the settings of a command kept in a file, and ``--print-config``.

The file holds the same settings as the flags, under the names the output's ``settings`` use:
one table per settings group (``[graph]``, ``[models]``, ``[retrieval]`` …, the groups of
:class:`~fact_reasoner.settings.config.PipelineConfig`) with the group's field names, and one table per
command for that command's own options (``[assess]``, ``[ragas]`` …: ``input_file``,
``output_dir``, ``metrics`` …, the flags' names with underscores)::

    [graph]
    version = 2

    [models]
    nli = "cross-encoder"

    [assess]
    input_file = "answers.jsonl"
    output_dir = "out"

Flags given on the command line override the file; a table for another command is left for
that command, so one file can serve several. A key that is not a setting is refused by name,
with the file and line (:class:`~fact_reasoner.errors.InputError`). Where a value came from
changes nothing: the settings model is the same, and so are the output's ``settings`` and the
resume fingerprint.

Reading is :mod:`tomllib`; writing (``--print-config``) is :func:`to_toml`, a writer for the
few kinds of value settings have (text, numbers, booleans, lists of those, tables).
"""

from __future__ import annotations

import math
import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..errors import InputError

__all__ = ["ConfigFile", "read_config_file", "to_toml"]


class ConfigFile:
    """A parsed settings file: its tables, and where each key is written (for messages)."""

    def __init__(self, path: Path, data: dict[str, Any], text: str) -> None:
        self.path = path
        self.data = data
        self._lines = text.splitlines()

    def line_of(self, table: str | None, key: str) -> int | None:
        """The line ``key`` is written on, in ``[table]`` (or a dotted ``table.key`` at the top,
        or an inline table), or None when it cannot be told."""
        current: str | None = None
        pattern = re.compile(rf"^\s*(?:\"?{re.escape(key)}\"?)\s*=")
        dotted = re.compile(rf"^\s*{re.escape(table or '')}\s*\.\s*{re.escape(key)}\s*=") if table else None
        for number, line in enumerate(self._lines, start=1):
            header = re.match(r"^\s*\[\s*([^\[\]]+?)\s*\]", line)
            if header:
                current = header.group(1)
                continue
            if current == table and pattern.match(line):
                return number
            if current is None and dotted is not None and dotted.match(line):
                return number
        for number, line in enumerate(self._lines, start=1):  # an inline table, or a nested one
            if re.search(rf"(^|[\s{{,.]){re.escape(key)}\s*=", line):
                return number
        return None

    def line_of_table(self, table: str) -> int | None:
        """The line of the ``[table]`` header (or of a ``table = …`` / ``table.key = …`` line)."""
        header = re.compile(rf"^\s*\[\s*\"?{re.escape(table)}\"?\s*\]")
        key = re.compile(rf"^\s*\"?{re.escape(table)}\"?\s*[.=]")
        for number, line in enumerate(self._lines, start=1):
            if header.match(line) or key.match(line):
                return number
        return None

    def error(self, table: str | None, key: str, message: str) -> InputError:
        """An :class:`InputError` naming the file and the line of ``key`` in ``[table]`` (of the
        table itself when ``table`` is None)."""
        line = self.line_of(table, key) if table is not None else self.line_of_table(key)
        return InputError(message, path=self.path, line=line)


def read_config_file(path: str | Path) -> ConfigFile:
    """The file's tables; a file that cannot be read or is not TOML raises :class:`InputError`
    (with the line tomllib names)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"config file not found: {path}") from None
    except IsADirectoryError:
        raise InputError("a directory, not a config file", path=path) from None
    except UnicodeDecodeError as error:
        raise InputError(f"not valid UTF-8 (byte {error.object[error.start]:#04x})", path=path) from None
    except OSError as error:
        raise InputError(f"cannot read the config file: {error.strerror or error}", path=path) from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        found = re.search(r"\(at line (\d+), column \d+\)", str(error))
        message = re.sub(r"\s*\(at line \d+, column \d+\)", "", str(error))
        raise InputError(f"not valid TOML: {message}", path=path, line=int(found.group(1)) if found else None) from None
    return ConfigFile(path, data, text)


# -- writing ----------------------------------------------------------------------------------------

_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def _key(name: str) -> str:
    return name if _BARE_KEY.match(name) else _string(name)


def _string(text: str) -> str:
    escaped = (
        text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t")
    )
    escaped = "".join(c if c >= " " or c in "\n\r\t" else f"\\u{ord(c):04x}" for c in escaped)
    return f'"{escaped}"'


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_value(item) for item in value if item is not None) + "]"
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{_key(str(k))} = {_value(v)}" for k, v in value.items() if v is not None) + "}"
    if isinstance(value, Path):
        return _string(str(value))
    return _string(str(value))


def to_toml(tables: Mapping[str, Mapping[str, Any]], comments: Mapping[str, str] | None = None) -> str:
    """TOML text of ``{table: {key: value}}``: one ``[table]`` per entry (``# comment`` above it
    when given), a dict value as its own ``[table.key]``; None values are written as a comment
    (TOML has no null), so that reading the text back gives the same tables less those keys.

    >>> print(to_toml({"graph": {"version": 2}, "models": {"nli": "align", "model": None}}), end="")
    [graph]
    version = 2
    <BLANKLINE>
    [models]
    nli = "align"
    # model: not set
    """
    blocks: list[str] = []
    for table, values in tables.items():
        lines = [f"# {comments[table]}"] if comments and table in comments else []
        lines.append(f"[{_key(table)}]")
        nested: list[tuple[str, Mapping[str, Any]]] = []
        for key, value in values.items():
            if value is None:
                lines.append(f"# {key}: not set")
            elif isinstance(value, Mapping):
                nested.append((key, value))
            else:
                lines.append(f"{_key(key)} = {_value(value)}")
        for key, value in nested:
            lines.append(f"[{_key(table)}.{_key(key)}]")
            lines += [f"{_key(str(k))} = {_value(v)}" for k, v in value.items() if v is not None]
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks) + "\n"
