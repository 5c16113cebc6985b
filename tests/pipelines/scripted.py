"""Shared set-up of the pipeline tests: the bundled examples and a config that talks to a
:class:`~fact_reasoner.llm.testing.ScriptedServer` (no cache, no retries: every call reaches it)."""

from __future__ import annotations

import json
import socket
from typing import Any

from fact_reasoner.schema import InputRecord
from fact_reasoner.settings.config import PipelineConfig
from tests.helpers import REPO_ROOT

EXAMPLES = REPO_ROOT / "fact_reasoner" / "examples"
BIOS = EXAMPLES / "bios_with_relations.jsonl"
SHORT_ANSWER = EXAMPLES / "short_answer.jsonl"


def example(path: Any, line: int = 1, **changes: Any) -> InputRecord:
    """Line ``line`` (1-based) of a bundled example, with some fields replaced."""
    data = json.loads(path.read_text().splitlines()[line - 1])
    return InputRecord.model_validate(data | changes)


def eiffel(**changes: Any) -> InputRecord:
    """The Eiffel Tower record: atoms a0–a4, contexts c_a0_0 (built 1887–1889 for the 1889
    World's Fair) and c_a2_0 (wrought iron, designed by Gustave Eiffel's company)."""
    return example(BIOS, 2, **changes)


def served_config(pipeline: str, base_url: str, **options: Any) -> PipelineConfig:
    return PipelineConfig(
        pipeline=pipeline,
        backend="openai",
        base_url=base_url,
        model="scripted",
        llm_retries=0,
        use_cache=False,
        **options,
    )


def prompts(server: Any) -> list[str]:
    """The user message of every request the server received, in order."""
    return [request["body"]["messages"][-1]["content"] for request in server.requests]


def free_port() -> int:
    """A port on 127.0.0.1 where nothing listens (connection refused)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
