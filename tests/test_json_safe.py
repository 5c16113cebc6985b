import json
import math

from fact_reasoner.io import dumps_line
from fact_reasoner.json_safe import json_safe


def test_nan_becomes_null_at_any_depth():
    value = {"score": math.nan, "parts": [1.0, (math.nan, "x")], "nested": {"inf": math.inf}}
    assert json_safe(value) == {"score": None, "parts": [1.0, [None, "x"]], "nested": {"inf": math.inf}}


def test_output_lines_are_strict_json():
    line = dumps_line({"p": math.nan, "atoms": [{"p": math.nan}]})
    assert "NaN" not in line
    assert json.loads(line) == {"p": None, "atoms": [{"p": None}]}
