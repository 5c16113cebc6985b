"""The project uses chromadb only through its embedded ``PersistentClient``: it never imports or
starts Chroma's HTTP server, where the open advisories lie (CVE-2026-45829 and others, no
patched release; see SECURITY.md).

- statically: every use of chromadb in the project's code is ``chromadb.PersistentClient`` and
  ``chromadb.config.Settings``, and no server entry point (``HttpClient``, ``chroma run``, the
  FastAPI app) is named anywhere;
- at run time: ``fact-reasoner index`` and an assessment with ``--service-type hybrid`` (dense
  retrieval from the chromadb collection, fused with BM25) run in a fresh interpreter, which then
  reports that no module of Chroma's server, FastAPI, Starlette or Uvicorn was imported, that
  the process holds no listening TCP socket and that it started no child process.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import textwrap
from pathlib import Path

from tests.helpers import REPO_ROOT, require_extra

#: the chromadb names the project may use: the embedded client and its settings
ALLOWED_ATTRIBUTES = {"PersistentClient"}
ALLOWED_IMPORTS = {("chromadb", None), ("chromadb.config", "Settings")}
#: module prefixes of an HTTP server: Chroma's own (chromadb.server, chromadb.app, its HTTP client
#: chromadb.api.fastapi) and the web stack it runs on
SERVER_MODULES = ("chromadb.server", "chromadb.app", "chromadb.api.fastapi", "fastapi", "starlette", "uvicorn")
SERVER_NAMES = ("HttpClient", "AsyncHttpClient", "CloudClient", "chromadb.server", "chromadb.app", "chroma run")
SOURCE_FOLDERS = ("fact_reasoner", "merlin_bridge", "experiments", "scripts")


def _project_sources() -> list[Path]:
    return [path for folder in SOURCE_FOLDERS for path in sorted((REPO_ROOT / folder).rglob("*.py"))]


def test_the_code_uses_only_the_embedded_client():
    uses: list[str] = []
    for path in _project_sources():
        source = path.read_text(encoding="utf-8")
        where = path.relative_to(REPO_ROOT)
        for name in SERVER_NAMES:
            assert name not in source, f"{where} names {name!r}"
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.split(".")[0] == "chromadb":
                        assert (alias.name, None) in ALLOWED_IMPORTS, f"{where}:{node.lineno} imports {alias.name}"
                        uses.append(f"{where}: import {alias.name}")
            elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "chromadb":
                for alias in node.names:
                    assert (node.module, alias.name) in ALLOWED_IMPORTS, (
                        f"{where}:{node.lineno} imports {alias.name} from {node.module}"
                    )
                uses.append(f"{where}: from {node.module} import …")
            elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "chromadb":
                assert node.attr in ALLOWED_ATTRIBUTES, f"{where}:{node.lineno} uses chromadb.{node.attr}"
                uses.append(f"{where}: chromadb.{node.attr}")
    # the scan did look at the real thing: the store opens its collection through PersistentClient
    assert "fact_reasoner/retrieval/store.py: chromadb.PersistentClient" in uses


#: run in a fresh interpreter: the commands, then what the process imported, listens on, started
PROBE = textwrap.dedent(
    """
    import json, os, runpy, sys

    def command(*argv):
        sys.argv = ["fact-reasoner", *argv]
        try:
            runpy.run_module("fact_reasoner", run_name="__main__", alter_sys=True)
        except SystemExit as done:
            assert done.code in (0, None), (argv, done.code)

    def listening_inodes():
        inodes = set()
        for table in ("/proc/net/tcp", "/proc/net/tcp6"):
            with open(table) as handle:
                for line in list(handle)[1:]:
                    fields = line.split()
                    if fields[3] == "0A":  # TCP_LISTEN
                        inodes.add(fields[9])
        return inodes

    def own_socket_inodes():
        found = set()
        for fd in os.listdir("/proc/self/fd"):
            try:
                target = os.readlink(f"/proc/self/fd/{fd}")
            except OSError:
                continue
            if target.startswith("socket:["):
                found.add(target[8:-1])
        return found

    def children():
        mine = str(os.getpid())
        kids = []
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                with open(f"/proc/{pid}/stat") as handle:
                    if handle.read().rsplit(")", 1)[1].split()[1] == mine:
                        kids.append(pid)
            except OSError:
                continue
        return kids

    store, corpus, records, out = sys.argv[1:5]
    command("index", "--corpus", corpus, "--store", store, "--collection", "bios", "--quiet")
    command("--input-file", records, "--output-dir", out, "--service-type", "hybrid", "--store", store,
            "--collection", "bios", "--nli", "align", "--no-revise", "--version", "1", "--quiet")
    print(json.dumps({
        "modules": sorted(sys.modules),
        "listening": sorted(listening_inodes() & own_socket_inodes()),
        "children": children(),
    }))
    """
)


def test_index_and_dense_retrieval_import_no_server_and_open_no_port(tmp_path):
    require_extra("retrieval", "embeddings")
    corpus = tmp_path / "passages.json"
    corpus.write_text(
        json.dumps(
            {
                "Marie Curie": [
                    {"title": "Marie Curie", "text": "Marie Curie was a Polish physicist and chemist."},
                    {"title": "Marie Curie", "text": "Curie won the Nobel Prize in Physics in 1903."},
                ],
                "Alan Turing": [
                    {
                        "title": "Alan Turing",
                        "text": "Alan Turing, an English mathematician, broke ciphers at Bletchley Park.",
                    }
                ],
            }
        )
    )
    records = tmp_path / "records.jsonl"
    records.write_text(
        json.dumps(
            {
                "input": "Tell me about Marie Curie.",
                "output": "Marie Curie was a physicist. She won a Nobel Prize.",
                "topic": "Marie Curie",
                "atoms": [
                    {"id": "a0", "text": "Marie Curie was a physicist."},
                    {"id": "a1", "text": "Marie Curie won a Nobel Prize."},
                ],
            }
        )
        + "\n"
    )
    script = tmp_path / "probe.py"
    script.write_text(PROBE)
    out = tmp_path / "out"
    done = subprocess.run(
        [sys.executable, str(script), str(tmp_path / "store"), str(corpus), str(records), str(out)],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        env={
            "PATH": "/usr/bin:/bin",
            "PYTHONPATH": str(REPO_ROOT),
            "FACT_REASONER_CACHE": str(tmp_path / "cache"),
            "FACT_REASONER_NO_INSTALL": "1",
            "HF_HUB_OFFLINE": "1",
            "HOME": str(tmp_path),
        },
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    modules = report["modules"]
    # the run did go through chromadb and the embedder (not a cached or lexical-only path)
    assert "chromadb" in modules and "fact_reasoner.retrieval.retrievers" in modules
    assert (tmp_path / "store" / "chroma" / "chroma.sqlite3").is_file()
    results = [json.loads(line) for line in next(out.glob("*.jsonl")).read_text().splitlines()]
    assert len(results) == 1, json.dumps(results)[:3000]
    contexts = results[0]["contexts"]
    assert {c["retrieval_source"] for c in contexts} == {"hybrid"}
    # shares no word with either atom: only the dense (chromadb) ranking can have found it
    assert "Alan Turing, an English mathematician, broke ciphers at Bletchley Park." in {c["text"] for c in contexts}
    server = [m for m in modules if m.startswith(SERVER_MODULES)]
    assert server == [], f"server modules imported: {server}"
    assert report["listening"] == [], "the process listens on a TCP port"
    assert report["children"] == [], "the process started a child process"
