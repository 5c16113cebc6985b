"""Values made fit for strict JSON before they are written."""

from __future__ import annotations

import math
from typing import Any


def json_safe(value: Any) -> Any:
    """``value`` with every float NaN replaced by None, through dicts, lists and tuples.

    JSON has no NaN: ``json.dumps`` would write the bare token ``NaN``, which strict readers
    (``jq``, JavaScript, pandas with ``orient=records``) refuse. A score that could not be
    computed is written as ``null`` instead. Tuples come back as lists, as JSON has them.
    """
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    return value
