"""UAI writer/reader of the merlin bridge: exact round trips (own reader and pgmpy's
independent ``UAIReader``), the evidence file and the explicit index ↔ name map."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from fact_reasoner.graph.factor_graph import FactorGraph
from fact_reasoner.inference import brute_force_marginals
from fact_reasoner.synthetic import paper_example_1, random_graph
from merlin_bridge.uai import (
    export_graph,
    format_value,
    load_exported,
    parse_uai,
    read_evidence,
    read_uai,
    read_variable_map,
    record_stem,
)


def factor_set(graph: FactorGraph) -> list[tuple[str, str, tuple[float, ...]]]:
    """Pairwise factors by variable names, sorted: comparable across variable orders."""
    return sorted(
        (graph.variables[s], graph.variables[t], tuple(table.ravel().tolist()))
        for s, t, table in zip(graph.source, graph.target, graph.tables)
    )


def graphs():
    rng = np.random.default_rng(7)
    out = [("example1", paper_example_1())]
    for version in (1, 2, 3):
        for use_priors in (False, True):
            out.append(
                (
                    f"FR{version}-priors{use_priors}",
                    random_graph(5, 4, version, rng, use_priors=use_priors, extreme=0.2, neutral=0.2),
                )
            )
    return out


GRAPHS = graphs()


def test_example_1_file_is_exactly_the_documented_layout(tmp_path):
    paths = export_graph(paper_example_1(), tmp_path / "ex1")
    assert [p.name for p in paths] == ["ex1.uai", "ex1.uai.evid", "ex1.vars.json"]
    # a1, c1, c2 sorted -> 0, 1, 2; priors first, then (context, atom) factors, last variable
    # fastest: entailment p=0.8 -> p p 1-p p; contradiction p=0.9 -> p p p 1-p.
    expected = (
        "\n".join(
            [
                "MARKOV",
                "3",
                "2 2 2",
                "5",
                "1 0",
                "1 1",
                "1 2",
                "2 1 0",
                "2 2 0",
                "",
                "2",
                "0.5 0.5",
                "",
                "2",
                f"{format_value(1 - 0.99)} 0.99",
                "",
                "2",
                f"{format_value(1 - 0.99)} 0.99",
                "",
                "4",
                f"0.8 0.8 {format_value(1 - 0.8)} 0.8",
                "",
                "4",
                f"0.9 0.9 0.9 {format_value(1 - 0.9)}",
            ]
        )
        + "\n"
    )
    assert paths[0].read_text() == expected
    assert paths[1].read_text() == "0\n"
    mapping = json.loads(paths[2].read_text())
    assert mapping["variables"] == ["a1", "c1", "c2"]
    assert mapping["evidence"] == {}


def test_index_is_position_in_sorted_names_not_graph_order(tmp_path):
    # graph order a2, a10, c1; Python's sorted order is a10 < a2 < c1.
    graph = FactorGraph.from_factors(
        {"a2": 0.5, "a10": 0.25, "c1": 0.9},
        [("c1", "a2", np.array([[0.7, 0.7], [0.3, 0.7]])), ("c1", "a10", np.array([[0.6, 0.6], [0.6, 0.4]]))],
    )
    paths = export_graph(graph, tmp_path / "m")
    assert read_variable_map(paths[2]).variables == ("a10", "a2", "c1")
    model = read_uai(paths[0])
    assert model.scopes == ((0,), (1,), (2,), (2, 1), (2, 0))
    assert model.tables[0].tolist() == [0.75, 0.25]  # a10's prior sits at index 0
    assert model.tables[3].tolist() == [[0.7, 0.7], [0.3, 0.7]]


@pytest.mark.parametrize("label,graph", GRAPHS, ids=[g[0] for g in GRAPHS])
def test_round_trip_through_own_reader_is_exact(tmp_path, label, graph):
    export_graph(graph, tmp_path / "m")
    back = load_exported(tmp_path / "m")
    assert back.log_constant == 0.0
    assert back.graph.variables == tuple(sorted(graph.variables))
    original_prior = dict(zip(graph.variables, graph.prior.tolist()))
    assert dict(zip(back.graph.variables, back.graph.prior.tolist())) == original_prior  # bit for bit
    assert factor_set(back.graph) == factor_set(graph)
    assert brute_force_marginals(back.graph).marginals == pytest.approx(
        brute_force_marginals(graph).marginals, abs=1e-15
    )


@pytest.mark.parametrize("label,graph", GRAPHS, ids=[g[0] for g in GRAPHS])
def test_round_trip_through_pgmpy_uai_reader_is_exact(tmp_path, label, graph):
    from pgmpy.readwrite import UAIReader

    paths = export_graph(graph, tmp_path / "m")
    names = read_variable_map(paths[2]).variables
    reader = UAIReader(str(paths[0]))
    assert reader.network_type == "MARKOV"
    assert reader.get_domain() == {f"var_{i}": "2" for i in range(len(names))}
    tables = reader.get_tables()
    assert len(tables) == graph.num_variables + graph.num_factors
    priors = {}
    pairwise = []
    for scope, values in tables:
        indices = [int(v.removeprefix("var_")) for v in scope]
        floats = tuple(float(x) for x in values)
        if len(indices) == 1:
            priors[names[indices[0]]] = floats
        else:
            pairwise.append((names[indices[0]], names[indices[1]], floats))
    assert priors == {name: (1.0 - p, p) for name, p in zip(graph.variables, graph.prior.tolist())}
    assert sorted(pairwise) == factor_set(graph)
    # the model pgmpy builds holds the same factors
    model = reader.get_model()
    assert len(model.get_factors()) == len(tables)


def test_values_are_positional_and_exact_for_awkward_doubles():
    rng = np.random.default_rng(0)
    values = [1e-6, 1 - 1e-6, 0.1, 1 / 3, 5e-324, 1e-300, 123456.789, 0.0, 1.0, *rng.random(200).tolist()]
    for x in values:
        text = format_value(x)
        assert "e" not in text.lower()
        assert float(text) == x
    with pytest.raises(ValueError, match="non-negative"):
        format_value(-0.5)
    with pytest.raises(ValueError, match="finite"):
        format_value(math.nan)


def test_evidence_file_and_map(tmp_path):
    graph = paper_example_1()
    paths = export_graph(graph, tmp_path / "e", evidence={"c2": 0, "a1": 1})
    assert paths[1].read_text() == "2 0 1 2 0\n"  # a1 -> 0, c2 -> 2, increasing index order
    assert read_evidence(paths[1]) == {0: 1, 2: 0}
    back = load_exported(tmp_path / "e")
    assert back.evidence == {"a1": 1, "c2": 0}
    with pytest.raises(ValueError, match="unknown variable"):
        export_graph(graph, tmp_path / "bad", evidence={"zz": 1})
    with pytest.raises(ValueError, match="0 or 1"):
        export_graph(graph, tmp_path / "bad", evidence={"a1": 2})
    (tmp_path / "short.evid").write_text("2 0 1\n")
    with pytest.raises(ValueError, match="announces 2 pairs"):
        read_evidence(tmp_path / "short.evid")
    (tmp_path / "empty.evid").write_text("")
    assert read_evidence(tmp_path / "empty.evid") == {}


def test_rescaled_export_keeps_marginals_and_records_log_scale(tmp_path):
    graph = random_graph(4, 5, 3, np.random.default_rng(3))
    export_graph(graph, tmp_path / "r", rescale=True)
    model = read_uai(tmp_path / "r.uai")
    assert all(table.max() == 1.0 for table in model.tables)
    back = load_exported(tmp_path / "r")
    exact = brute_force_marginals(graph)
    read = brute_force_marginals(back.graph)
    assert read.marginals == pytest.approx(exact.marginals, abs=1e-12)
    # ln Z(file) = ln Z(read graph) + log_constant;  ln Z(graph) = ln Z(file) + log_scale
    log_z_file = read.log_partition + back.log_constant
    assert log_z_file + back.variables.log_scale == pytest.approx(exact.log_partition, abs=1e-9)
    assert back.variables.log_scale < 0


def test_reader_reports_bad_files_clearly():
    good = "MARKOV\n2\n2 2\n1\n2 0 1\n4\n0.1 0.2 0.3 0.4\n"
    assert parse_uai(good).tables[0].tolist() == [[0.1, 0.2], [0.3, 0.4]]
    with pytest.raises(ValueError, match="ends early"):
        parse_uai(good[: good.rindex("0.3")])
    with pytest.raises(ValueError, match="declares 3 values"):
        parse_uai("MARKOV\n2\n2 2\n1\n2 0 1\n3\n0.1 0.2 0.3\n")
    with pytest.raises(ValueError, match="outside 0..1"):
        parse_uai("MARKOV\n2\n2 2\n1\n2 0 5\n4\n0.1 0.2 0.3 0.4\n")
    with pytest.raises(ValueError, match="MARKOV or BAYES"):
        parse_uai("MRF\n1\n2\n0\n")
    with pytest.raises(ValueError, match="not a number"):
        parse_uai("MARKOV\n1\n2\n1\n1 0\n2\n0.5 x\n")
    with pytest.raises(ValueError, match="trailing"):
        parse_uai(good + "0.5\n")


def test_bayes_files_are_read_with_child_last():
    # P(a) = [0.3, 0.7]; P(b | a): rows a = 0, 1; columns b = 0, 1.
    model = parse_uai("BAYES\n2\n2 2\n2\n1 0\n2 0 1\n2\n0.3 0.7\n4\n0.9 0.1 0.2 0.8\n")
    assert model.network_type == "BAYES"
    assert model.tables[1][1, 1] == 0.8  # P(b=1 | a=1)
    with pytest.raises(ValueError, match="only MARKOV"):
        model.to_factor_graph()
    marginal_b = (model.tables[0][:, None] * model.tables[1]).sum(axis=0)
    assert marginal_b.tolist() == pytest.approx([0.3 * 0.9 + 0.7 * 0.2, 0.3 * 0.1 + 0.7 * 0.8])


def test_to_factor_graph_normalises_general_unary_factors():
    # two unary factors on x0 ([2, 1] and [1, 3]) and none on x1: prior 3/5, log constant log 5 + log 2.
    model = parse_uai("MARKOV\n2\n2 2\n3\n1 0\n1 0\n2 0 1\n2\n2 1\n2\n1 3\n4\n1 1 1 1\n")
    graph, log_constant = model.to_factor_graph(["x", "y"])
    assert graph.prior.tolist() == pytest.approx([0.6, 0.5])
    assert log_constant == pytest.approx(math.log(5) + math.log(2))


def test_record_stem_keeps_ids_inside_the_directory(tmp_path):
    assert record_stem(tmp_path, "bio-12") == tmp_path / "bio-12"
    assert record_stem(tmp_path, "../../etc/x y") == tmp_path / "_.._etc_x_y"
    assert record_stem(tmp_path, "") == tmp_path / "record"
    paths = export_graph(paper_example_1(), record_stem(tmp_path, "q/1"))
    assert paths[0] == tmp_path / "q_1.uai"
