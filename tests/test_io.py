"""Reading records: JSONL and JSON files, error messages with file, line and field."""

import json

import pytest

from fact_reasoner.io import InputError, NumberedRecord, RecordError, dumps_line, read_records


def test_json_list_reports_the_line_where_each_item_starts(tmp_path):
    path = tmp_path / "records.json"
    path.write_text('[\n  {"output": "fine"},\n  {"output": "x",\n   "atoms": [{"text": "no id"}]}\n]\n')
    first, second = list(read_records(path))
    assert isinstance(first, NumberedRecord) and first.line == 2
    assert isinstance(second, RecordError)
    assert str(second) == f"{path}:3: atoms.0.id: Field required"


def test_identical_records_get_distinct_resume_keys(tmp_path):
    path = tmp_path / "twice.jsonl"
    line = json.dumps({"input": "q", "output": "a"})
    path.write_text(f"{line}\n\n{line}\n")
    keys = [r.key for r in read_records(path)]
    assert len(keys) == 2 and keys[0] != keys[1] and keys[0].split("#")[0] == keys[1].split("#")[0]


def test_missing_file_is_a_clear_error(tmp_path):
    with pytest.raises(InputError, match="input file not found"):
        list(read_records(tmp_path / "nope.jsonl"))


def test_record_level_checks(tmp_path):
    path = tmp_path / "bad.jsonl"
    rows = [
        {"output": "x", "atoms": [{"id": "a0", "text": "t"}, {"id": "a0", "text": "u"}]},
        {"output": "x", "atoms": [{"id": "a0", "text": "t", "contexts": ["c9"]}], "contexts": []},
        {"output": "x", "atoms": [{"id": "a0", "text": "t", "label": "maybe"}]},
        {"output": "x", "relations": [{"source": "c0", "target": "a0", "relation": "entailment", "probability": 1.5}]},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    errors = [str(e) for e in read_records(path)]
    assert "duplicate atom ids: ['a0']" in errors[0]
    assert "unknown contexts ['c9']" in errors[1]
    assert ":3: atoms.0.label:" in errors[2]
    assert ":4: relations.0.probability:" in errors[3]


def test_nan_is_written_as_null():
    assert json.loads(dumps_line({"score": float("nan"), "nested": [float("nan"), 1.0]})) == {
        "score": None,
        "nested": [None, 1.0],
    }


def test_rows_finished_out_of_order_are_written_in_input_order(tmp_path):
    from fact_reasoner.io import InOrderWriter, ResultWriter

    with ResultWriter(tmp_path / "out.jsonl", key_field="k") as writer:
        in_order = InOrderWriter(writer)
        in_order.put(2, {"k": "c"})
        in_order.put(1, None)  # a failed position: nothing written, the next ones not held up
        assert not (tmp_path / "out.jsonl").read_text()
        in_order.put(0, {"k": "a"})
        in_order.put(4, {"k": "e"})  # 3 never comes (interrupted): flushed anyway
        in_order.flush()
    assert [json.loads(x)["k"] for x in (tmp_path / "out.jsonl").read_text().splitlines()] == ["a", "c", "e"]


def test_an_interrupt_between_writing_and_recording_a_line_is_read_back_on_close(tmp_path):
    """What a KeyboardInterrupt after the fsync but before ``done`` is updated leaves behind."""
    from fact_reasoner.io import ResultWriter

    class Interrupted(KeyboardInterrupt):
        pass

    writer = ResultWriter(tmp_path / "out.jsonl", key_field="k")
    writer.write({"k": "a"})
    real_loads = json.loads

    def interrupt_after_the_line(text, *args, **kwargs):
        raise Interrupted()

    json.loads = interrupt_after_the_line  # the step that records the key, after the fsync
    try:
        with pytest.raises(Interrupted):
            writer.write({"k": "b"})
    finally:
        json.loads = real_loads
    assert set(writer.done) == {"a"}  # not yet known …
    writer.close()
    assert set(writer.done) == {"a", "b"}  # … read back from the file: the count a run reports


def test_contexts_are_read_like_records_and_the_first_bad_one_names_file_and_line(tmp_path):
    from fact_reasoner.io import read_contexts

    path = tmp_path / "ctx.jsonl"
    path.write_bytes(b'\xef\xbb\xbf{"text": "one"}\n\n{"id": "own", "title": "T", "text": "two"}\n')
    first, second = read_contexts(path)
    assert (first.id, first.text) == ("c0", "one")  # an id by position when none is given
    assert (second.id, second.title, second.text) == ("own", "T", "two")

    path.write_text('{"text": "one"}\n{"text": "two"\n')
    with pytest.raises(InputError) as error:
        read_contexts(path)
    assert str(error.value) == f"{path}:2: invalid JSON at column 15: Expecting ',' delimiter"
    assert (error.value.path, error.value.line) == (str(path), 2)

    path.write_text('{"text": "one"}\n["not", "an", "object"]\n')
    with pytest.raises(InputError, match=r":2: expected a JSON object with a `text`$"):
        read_contexts(path)
    path.write_text('{"title": "no text"}\n')
    with pytest.raises(InputError, match=r":1: text: Field required$"):
        read_contexts(path)

    listed = tmp_path / "ctx.json"
    listed.write_text('[\n  {"text": "one"},\n  {"text": 5}\n]\n')
    with pytest.raises(InputError, match=r"ctx.json:3: text: "):  # the line where the item starts
        read_contexts(listed)
    path.write_text("\n")
    assert read_contexts(path) == []  # an empty JSONL file: no passages, not an error


def test_contexts_may_be_plain_strings_as_rag_code_holds_them(tmp_path):
    """``"contexts": ["…", "…"]`` (ragas, DeepEval) is read as contexts ``c0``, ``c1``; an object
    without an id gets the id of its position too; an id given twice is still refused."""
    path = tmp_path / "rag.jsonl"
    rows = [
        {"input": "q", "output": "a", "contexts": ["Paris is in France.", {"text": "Rome is in Italy.", "title": "R"}]},
        {"input": "q", "output": "a", "contexts": ["first", {"id": "c0", "text": "second"}]},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    read, clash = list(read_records(path))
    assert isinstance(read, NumberedRecord)
    assert [(c.id, c.text, c.title) for c in read.record.contexts] == [
        ("c0", "Paris is in France.", None),
        ("c1", "Rome is in Italy.", "R"),
    ]
    assert isinstance(clash, RecordError) and "duplicate context ids: ['c0']" in str(clash)
