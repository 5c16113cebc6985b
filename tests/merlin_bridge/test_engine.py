"""The merlin engine end to end through a real subprocess.

Every test that only needs "a merlin" runs against the exact reference solver (an executable
wrapper written into a temporary directory) and, when ``MERLIN_PATH`` points to a compiled
merlin, against that binary too. Error paths use the reference solver's fault injection.
"""

from __future__ import annotations

import os
import re
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pytest

from fact_reasoner.graph.factor_graph import FactorGraph
from fact_reasoner.inference import InferenceError, brute_force_marginals, make_engine
from fact_reasoner.synthetic import paper_example_1, random_graph
from merlin_bridge import (
    MerlinExitError,
    MerlinNotFoundError,
    MerlinOutputError,
    MerlinTimeoutError,
    MerlinUnderflowError,
    MerlinVariableMismatchError,
    export_graph,
    load_exported,
)
from merlin_bridge.engine import MerlinEngine
from merlin_bridge.output import parse_mar_json, parse_mar_uai
from merlin_bridge.reference_solver import write_wrapper

REAL_MERLIN = os.environ.get("MERLIN_PATH")
NO_REAL_MERLIN = (
    "MERLIN_PATH is not set: build merlin (see README) and set MERLIN_PATH to run these against the real binary"
)


@pytest.fixture(scope="session")
def reference_merlin(tmp_path_factory) -> Path:
    return write_wrapper(tmp_path_factory.mktemp("reference_merlin"))


@pytest.fixture(params=["reference", "real"])
def merlin(request, reference_merlin) -> Path:
    """Each test runs with the reference solver, and with the real merlin if MERLIN_PATH is set."""
    if request.param == "real":
        if not REAL_MERLIN:
            pytest.skip(NO_REAL_MERLIN)
        return Path(REAL_MERLIN)
    return reference_merlin


@pytest.fixture
def fault(monkeypatch):
    def set_fault(name: str, **extra: str) -> None:
        monkeypatch.setenv("MERLIN_REFERENCE_FAULT", name)
        for key, value in extra.items():
            monkeypatch.setenv(key, value)

    return set_fault


def disjoint_union(graphs: list[FactorGraph]) -> FactorGraph:
    """One graph holding all of ``graphs`` (names prefixed ``g<k>_``): one merlin run for all."""
    variables, prior, source, target, tables = [], [], [], [], []
    for k, graph in enumerate(graphs):
        offset = len(variables)
        variables += [f"g{k}_{name}" for name in graph.variables]
        prior.append(graph.prior)
        source.append(graph.source + offset)
        target.append(graph.target + offset)
        tables.append(graph.tables)
    return FactorGraph(
        tuple(variables), np.concatenate(prior), np.concatenate(source), np.concatenate(target), np.concatenate(tables)
    )


def low_width_graph() -> FactorGraph:
    """FR-like graphs whose induced width is ≤ 6 (WMB at i-bound 6 is exact on them)."""
    rng = np.random.default_rng(11)
    return disjoint_union(
        [
            random_graph(6, 3, 2, rng),  # FR2: width ≤ min(n, m) = 3
            random_graph(8, 5, 1, rng, contexts_per_atom=2),
            random_graph(4, 5, 3, rng, use_priors=True),  # FR3: width ≤ m = 5
            random_graph(10, 2, 2, rng, agreement=0.5),
        ]
    )


# --------------------------------------------------------------------------------------------
# Results


@pytest.mark.parametrize("output_format", ["json", "uai"])
def test_paper_example_1_through_the_bridge(merlin, output_format):
    result = MerlinEngine(str(merlin), output_format=output_format).infer(paper_example_1())
    assert round(result.marginals["a1"], 4) == 0.3179
    assert result.marginals["a1"] == pytest.approx(brute_force_marginals(paper_example_1()).marginals["a1"], abs=1e-6)
    assert result.algorithm == "merlin-wmb"
    assert result.exact is True


@pytest.mark.parametrize("output_format", ["json", "uai"])
def test_marginals_match_exact_and_native_on_low_width_graphs(merlin, output_format):
    from fact_reasoner.inference.native import NativeEngine

    graph = low_width_graph()
    result = MerlinEngine(str(merlin), ibound=6, output_format=output_format).infer(graph)
    native = NativeEngine(method="exact").infer(graph)
    assert list(result.marginals) == list(graph.variables)
    for name in graph.variables:
        assert abs(result.marginals[name] - native.marginals[name]) <= 1e-6
    assert result.exact is True
    # ln Z of the graph itself: merlin ran on rescaled tables, the engine adds log_scale back
    assert result.log_partition == pytest.approx(native.log_partition, abs=1e-5)


def test_native_exact_is_exact_on_the_test_graph():
    """The comparison above trusts NativeEngine(method="exact"): check it per part by enumeration."""
    from fact_reasoner.inference.native import NativeEngine

    graph = low_width_graph()
    native = NativeEngine(method="exact").infer(graph)
    for members in graph.components():
        part = graph.subgraph(members)
        exact = brute_force_marginals(part)
        for name in part.variables:
            assert native.marginals[name] == pytest.approx(exact.marginals[name], abs=1e-12)


def test_registry_makes_the_merlin_engine(reference_merlin):
    engine = make_engine("merlin", merlin_path=str(reference_merlin), ibound=4, algorithm="bte")
    assert isinstance(engine, MerlinEngine) and engine.name == "merlin"
    result = engine.infer(paper_example_1())
    assert result.algorithm == "merlin-bte" and result.exact


def test_evidence_through_the_solver(merlin, tmp_path):
    graph = random_graph(3, 3, 3, np.random.default_rng(5))
    paths = export_graph(graph, tmp_path / "m", evidence={"c0": 1, "a1": 0})
    subprocess.run(
        [
            str(merlin),
            "--input-file",
            str(paths[0]),
            "--evidence-file",
            str(paths[1]),
            "--task",
            "MAR",
            "--algorithm",
            "wmb",
            "--ibound",
            "6",
            "--output-format",
            "json",
            "--output-file",
            str(tmp_path / "out"),
        ],
        check=True,
        capture_output=True,
        cwd=tmp_path,
    )
    names = load_exported(tmp_path / "m").variables.variables
    output = parse_mar_json((tmp_path / "out.MAR.json").read_text(), len(names))
    marginals = dict(zip(names, output.marginals))
    assert marginals["c0"] == (0.0, 1.0) and marginals["a1"] == (1.0, 0.0)
    # exact conditional marginals: enumerate the joint and keep the states matching the evidence
    v = graph.num_variables
    from fact_reasoner.inference.brute_force import log_joint_table

    logp = log_joint_table(graph)
    states = (np.arange(2**v)[:, None] >> np.arange(v - 1, -1, -1)) & 1
    keep = (states[:, graph.index("c0")] == 1) & (states[:, graph.index("a1")] == 0)
    w = np.exp(logp[keep] - logp[keep].max())
    conditional = (w[:, None] * states[keep]).sum(axis=0) / w.sum()
    for name in names:
        assert marginals[name][1] == pytest.approx(conditional[graph.index(name)], abs=1e-6)
    # ln Z reported = ln P̃(evidence) (tables written unscaled here)
    top = logp[keep].max()
    assert output.log_partition == pytest.approx(np.log(w.sum()) + top, abs=1e-5)


def test_reference_output_has_merlins_layout(reference_merlin, tmp_path):
    """Byte for byte like merlin's JSON (iterations aside) when a real merlin is available."""
    if not REAL_MERLIN:
        pytest.skip(NO_REAL_MERLIN)
    paths = export_graph(paper_example_1(), tmp_path / "m")
    texts = {}
    for label, binary in (("reference", reference_merlin), ("real", REAL_MERLIN)):
        for algorithm in ("wmb", "gibbs"):
            for fmt, suffix in (("json", ".MAR.json"), ("uai", ".MAR")):
                stem = tmp_path / f"{label}-{algorithm}"
                subprocess.run(
                    [
                        str(binary),
                        "--input-file",
                        str(paths[0]),
                        "--evidence-file",
                        str(paths[1]),
                        "--task",
                        "MAR",
                        "--algorithm",
                        algorithm,
                        "--ibound",
                        "6",
                        "--output-format",
                        fmt,
                        "--output-file",
                        str(stem),
                    ],
                    check=True,
                    capture_output=True,
                    cwd=tmp_path,
                )
                text = Path(str(stem) + suffix).read_text()
                text = re.sub(r'"iterations" : \d+', '"iterations" : N', text)
                if algorithm == "gibbs":  # sampled numbers differ; compare the layout only
                    text = re.sub(r"-?\d+\.\d+", "X", text)
                texts[label, algorithm, fmt] = text
    for algorithm in ("wmb", "gibbs"):
        for fmt in ("json", "uai"):
            assert texts["reference", algorithm, fmt] == texts["real", algorithm, fmt], (algorithm, fmt)


# --------------------------------------------------------------------------------------------
# Files: temporary directory and keep_uai


def test_temporary_directory_is_removed_after_success(merlin, tmp_path, monkeypatch):
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    MerlinEngine(str(merlin)).infer(paper_example_1())
    assert list(scratch.iterdir()) == []


@pytest.mark.parametrize("kind", ["exit", "garbage"])
def test_temporary_directory_is_removed_after_failure(reference_merlin, tmp_path, monkeypatch, fault, kind):
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    fault(kind)
    with pytest.raises(InferenceError):
        MerlinEngine(str(reference_merlin)).infer(paper_example_1())
    assert list(scratch.iterdir()) == []


def test_keep_uai_keeps_every_run_without_overwriting(merlin, tmp_path):
    keep = tmp_path / "kept"
    engine = MerlinEngine(str(merlin), keep_uai=str(keep))
    first, second = paper_example_1(), random_graph(3, 2, 2, np.random.default_rng(1))
    engine.infer(first)
    engine.infer(second)
    names = sorted(p.name for p in keep.iterdir())
    assert names == [
        "model_0001.MAR.json",
        "model_0001.uai",
        "model_0001.uai.evid",
        "model_0001.vars.json",
        "model_0002.MAR.json",
        "model_0002.uai",
        "model_0002.uai.evid",
        "model_0002.vars.json",
    ]
    back = load_exported(keep / "model_0002")
    assert back.graph.variables == tuple(sorted(second.variables))
    # a new engine on the same directory continues the numbering
    MerlinEngine(str(merlin), keep_uai=str(keep), output_format="uai").infer(first)
    assert (keep / "model_0003.MAR").exists()


def test_keep_uai_keeps_the_files_of_a_failed_run(reference_merlin, tmp_path, fault):
    fault("garbage")
    keep = tmp_path / "kept"
    with pytest.raises(MerlinOutputError):
        MerlinEngine(str(reference_merlin), keep_uai=str(keep)).infer(paper_example_1())
    assert (keep / "model_0001.uai").exists()
    assert (keep / "model_0001.MAR.json").read_text() == "this is not merlin output\n"


# --------------------------------------------------------------------------------------------
# Errors


def test_binary_missing_or_unusable(tmp_path, monkeypatch):
    monkeypatch.delenv("MERLIN_PATH", raising=False)
    with pytest.raises(MerlinNotFoundError, match="--merlin-path .* or set MERLIN_PATH"):
        MerlinEngine()
    with pytest.raises(MerlinNotFoundError, match="does not exist"):
        MerlinEngine(str(tmp_path / "nowhere" / "merlin"))
    with pytest.raises(MerlinNotFoundError, match="is a directory"):
        MerlinEngine(str(tmp_path))
    plain = tmp_path / "merlin"
    plain.write_text("#!/bin/sh\n")
    plain.chmod(stat.S_IRUSR | stat.S_IWUSR)
    with pytest.raises(MerlinNotFoundError, match="not executable"):
        MerlinEngine(str(plain))
    monkeypatch.setenv("MERLIN_PATH", str(tmp_path / "gone"))
    with pytest.raises(MerlinNotFoundError, match="MERLIN_PATH does not exist"):
        MerlinEngine()
    assert issubclass(MerlinNotFoundError, InferenceError)


def test_merlin_path_environment_variable_is_used(reference_merlin, monkeypatch):
    monkeypatch.setenv("MERLIN_PATH", str(reference_merlin))
    engine = MerlinEngine()
    assert engine.binary == reference_merlin.resolve()
    assert round(engine.infer(paper_example_1()).marginals["a1"], 4) == 0.3179


def test_non_zero_exit_shows_stderr_tail(reference_merlin, fault):
    fault("exit")
    with pytest.raises(MerlinExitError, match="exited with status 3: .*injected failure") as info:
        MerlinEngine(str(reference_merlin)).infer(paper_example_1())
    assert info.value.returncode == 3
    assert "out of memory" in info.value.stderr_tail


def test_timeout_kills_the_whole_process_group(reference_merlin, tmp_path, fault):
    fault("sleep", MERLIN_REFERENCE_SLEEP="60")
    # a wrapper that does not exec: killing only the shell would leave the sleeping solver
    # holding the pipes and the runner would wait for it.
    wrapper = tmp_path / "merlin"
    pid_file = tmp_path / "solver.pid"
    wrapper.write_text(f'#!/bin/sh\n"{reference_merlin}" "$@" &\necho $! > "{pid_file}"\nwait $!\necho done\n')
    wrapper.chmod(0o755)
    with pytest.raises(MerlinTimeoutError, match="did not finish within 2 s"):
        MerlinEngine(str(wrapper), timeout=2).infer(paper_example_1())
    solver = int(pid_file.read_text())
    # the sleeping solver, a grandchild, went with the group: it is gone (or a zombie) now
    for _ in range(100):
        if not _running(solver):
            break
        time.sleep(0.1)
    assert not _running(solver)


def _running(pid: int) -> bool:
    """The process exists and is not a zombie (an exited child its parent has not reaped)."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


@pytest.mark.parametrize("output_format", ["json", "uai"])
def test_status_false_is_an_error_never_numbers(reference_merlin, fault, output_format):
    fault("status-false")
    with pytest.raises(MerlinUnderflowError, match="status false .*no marginals"):
        MerlinEngine(str(reference_merlin), output_format=output_format).infer(paper_example_1())


def test_real_underflow_without_rescaling_and_its_cure(merlin):
    # 400 disjoint pairs with tables of 0.1: ln Z = 400 ln 0.1 ≈ −921, exp(ln Z) == 0.
    priors = {f"v{i:04d}": 0.5 for i in range(800)}
    factors = [(f"v{2 * i:04d}", f"v{2 * i + 1:04d}", np.full((2, 2), 0.1)) for i in range(400)]
    graph = FactorGraph.from_factors(priors, factors)
    with pytest.raises(MerlinUnderflowError):
        MerlinEngine(str(merlin), rescale=False).infer(graph)
    result = MerlinEngine(str(merlin)).infer(graph)
    assert all(p == pytest.approx(0.5, abs=1e-6) for p in result.marginals.values())
    assert result.log_partition == pytest.approx(400 * np.log(0.1), abs=1e-4)


@pytest.mark.parametrize(
    "kind,output_format", [("truncate", "json"), ("truncate", "uai"), ("garbage", "json"), ("no-output", "uai")]
)
def test_malformed_or_missing_output(reference_merlin, fault, kind, output_format):
    fault(kind)
    with pytest.raises(MerlinOutputError) as info:
        MerlinEngine(str(reference_merlin), output_format=output_format).infer(paper_example_1())
    assert not isinstance(info.value, MerlinVariableMismatchError)
    if kind == "no-output":
        assert "wrote no out.MAR" in str(info.value)


def test_uai_parser_refuses_garbage_and_bad_counts():
    with pytest.raises(MerlinOutputError, match="lacks a PR or STATUS"):
        parse_mar_uai("this is not merlin output\n", 2)
    with pytest.raises(MerlinOutputError, match="truncated inside"):
        parse_mar_uai("PR\n-1 (0.3)\nSTATUS\ntrue: ok\nMAR\n2 2 0.5 0.5 2 0.5\n", 2)
    with pytest.raises(MerlinOutputError, match="no MAR section"):
        parse_mar_uai("PR\n-1 (0.3)\nSTATUS\ntrue: ok\n", 2)
    with pytest.raises(MerlinOutputError, match="not valid JSON"):
        parse_mar_json(MERLIN_JSON[: len(MERLIN_JSON) // 2], 2)


@pytest.mark.parametrize("output_format", ["json", "uai"])
def test_variable_count_mismatch(reference_merlin, fault, output_format):
    fault("count-mismatch")
    with pytest.raises(MerlinVariableMismatchError, match="3 variables but the output lists 2"):
        MerlinEngine(str(reference_merlin), output_format=output_format).infer(paper_example_1())


def test_crash_by_signal_is_reported(tmp_path):
    crasher = tmp_path / "merlin"
    crasher.write_text(
        f'#!{sys.executable}\nimport os, signal, sys\nprint("Cannot open the input file", file=sys.stderr)\nsys.stderr.flush()\nos.kill(os.getpid(), signal.SIGSEGV)\n'
    )
    crasher.chmod(0o755)
    with pytest.raises(MerlinExitError, match="killed by signal 11: Cannot open the input file"):
        MerlinEngine(str(crasher)).infer(paper_example_1())


def test_bad_options_are_refused_before_running(reference_merlin):
    with pytest.raises(ValueError, match="algorithm"):
        MerlinEngine(str(reference_merlin), algorithm="magic")
    with pytest.raises(ValueError, match="output format"):
        MerlinEngine(str(reference_merlin), output_format="xml")
    with pytest.raises(ValueError, match="timeout"):
        MerlinEngine(str(reference_merlin), timeout=0)


# --------------------------------------------------------------------------------------------
# Parsers on merlin's own text


MERLIN_JSON = (
    '{ "algorithm" : "wmb",  "ibound" : 6,  "iterations" : 1,  "task" : "MAR",  "value" : -1.995836,  '
    '"status" : "true",  "message" : "Consistent evidence",  "marginals" : [ { "variable" : 0,  "states" : 2,  '
    '"probabilities" : [0.682119, 0.317881] }, { "variable" : 1,  "states" : 2,  "probabilities" : [0.029669, 0.970331] }] }'
)


def test_parsers_read_merlins_text():
    out = parse_mar_json(MERLIN_JSON, 2)
    assert out.marginals == ((0.682119, 0.317881), (0.029669, 0.970331))
    assert out.log_partition == -1.995836 and out.algorithm == "wmb" and out.ibound == 6
    uai = "PR\n-1.995836 (1.359000e-01)\nSTATUS\ntrue: Consistent evidence\nMAR\n2 2 0.682119 0.317881 2 0.029669 0.970331\n"
    assert parse_mar_uai(uai, 2).marginals == out.marginals
    with pytest.raises(MerlinVariableMismatchError):
        parse_mar_json(MERLIN_JSON, 3)


def test_underflowed_json_with_bare_inf_is_underflow_not_malformed():
    text = (
        '{ "algorithm" : "wmb",  "ibound" : 6,  "iterations" : 1,  "task" : "MAR",  "value" : -inf,  '
        '"status" : "false",  "message" : "Inconsistent evidence or underflow",  "marginals" : [] }'
    )
    with pytest.raises(MerlinUnderflowError, match="-inf"):
        parse_mar_json(text, 2)
    with pytest.raises(MerlinOutputError, match="sum to"):
        parse_mar_json(MERLIN_JSON.replace("0.317881", "0.517881"), 2)


def test_gibbs_output_quirks_are_accepted_only_for_gibbs():
    """merlin's Gibbs writer drops the JSON's closing brace and the UAI PR/STATUS sections."""
    gibbs_json = MERLIN_JSON.replace(
        '"algorithm" : "wmb",  "ibound" : 6,  "iterations" : 1', '"algorithm" : "gibbs",  "samples" : 1000'
    )
    gibbs_json = gibbs_json.replace('"message" : "Consistent evidence",  ', "")[:-1]  # no closing brace
    assert parse_mar_json(gibbs_json, 2, gibbs_quirks=True).marginals[0] == (0.682119, 0.317881)
    with pytest.raises(MerlinOutputError, match="not valid JSON"):
        parse_mar_json(gibbs_json, 2)
    gibbs_uai = "MAR\n2 2 0.682119 0.317881 2 0.029669 0.970331\n"
    assert np.isnan(parse_mar_uai(gibbs_uai, 2, gibbs_quirks=True).log_partition)
    with pytest.raises(MerlinOutputError, match="lacks a PR or STATUS"):
        parse_mar_uai(gibbs_uai, 2)
    with pytest.raises(MerlinOutputError, match="not valid JSON"):  # other truncation still fails
        parse_mar_json(gibbs_json[:-30], 2, gibbs_quirks=True)


@pytest.mark.parametrize("output_format", ["json", "uai"])
def test_gibbs_end_to_end(merlin, output_format):
    result = MerlinEngine(str(merlin), algorithm="gibbs", output_format=output_format).infer(paper_example_1())
    assert result.algorithm == "merlin-gibbs" and result.exact is False
    assert set(result.marginals) == {"a1", "c1", "c2"}
    assert all(0.0 <= p <= 1.0 for p in result.marginals.values())
    if output_format == "uai":
        assert result.log_partition is None  # merlin's Gibbs UAI output has no ln Z


def test_nan_marginals_are_a_numerical_failure():
    """Seen with WMB on FR3 100×200 when tables are scaled around 1: ``[-nan, -nan]``."""
    text = MERLIN_JSON.replace("[0.682119, 0.317881]", "[-nan, -nan]")
    with pytest.raises(MerlinUnderflowError, match="non-finite marginals for variable 0"):
        parse_mar_json(text, 2)
    uai = "PR\n5314.894516 (inf)\nSTATUS\ntrue: Consistent evidence\nMAR\n2 2 nan nan 2 0.5 0.5\n"
    with pytest.raises(MerlinUnderflowError, match="non-finite"):
        parse_mar_uai(uai, 2)
