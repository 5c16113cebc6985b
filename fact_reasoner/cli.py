"""Command line: ``python -m fact_reasoner`` / ``fact-reasoner``.

The default command assesses a dataset (or one response) and writes one JSON line per record.
Other commands (``index``, ``ragas``, ``report``) are contributed by their modules through a
``register(subparsers)`` function, so each lives beside the stage it belongs to.
"""

from __future__ import annotations

import argparse
import importlib
import json
import math
import signal
import sys
import time
from pathlib import Path
from typing import Any

from .config import PipelineConfig
from .errors import SetupError
from .inference import available_engines
from .io import NumberedRecord, RecordError, ResultWriter, dumps_line, read_records
from .scores import describe_k, median_num_atoms, summarize_rows

#: Sub-commands contributed by other modules: name -> module with ``register(subparsers)``.
PLUGIN_COMMANDS = {
    "index": "fact_reasoner.retrieval.cli",
    "ragas": "fact_reasoner.metrics.cli",
    "report": "fact_reasoner.report",
}

DESCRIPTION = """\
Assess the factuality of long-form responses with FactReasoner's factor graphs.

Each input record (JSONL, or IBM's JSON files) has `input` (the question) and `output` (the
response), and optionally `atoms`, `contexts` and precomputed NLI `relations`. Whatever a record
lacks is produced by the pipeline: atomize -> revise -> retrieve -> NLI. The graph is FR1, FR2
or FR3 (--version); the posterior P(atom is true) of each atom gives S (> 0.5) or NS, the
factual precision, R@K, F1@K and entropy, and agreement with gold labels when atoms carry them.

Output: one JSON line per record, written as soon as the record is done; rerunning the same
command skips records already written, so an interrupted run resumes where it stopped.
"""

EPILOG = """\
examples:
  fact-reasoner --version 3 --input-file fact_reasoner/examples/flaherty_relations.jsonl --output-dir out
  fact-reasoner --version 2 --input_file data.jsonl --output_dir out --engine pgmpy --use_priors
  fact-reasoner --query "Who was Marie Curie?" --response "Marie Curie was a physicist." --contexts ctx.jsonl
other commands: fact-reasoner index --help | ragas --help | report --help
"""


def _k_value(text: str) -> int | str:
    if text in ("median", "half"):
        return text
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError("K must be a positive integer, 'median' or 'half'") from None
    if value < 1:
        raise argparse.ArgumentTypeError("K must be a positive integer")
    return value


def probability_arg(text: str) -> float:
    value = float(text)
    if not 0.0 < value < 1.0:
        raise argparse.ArgumentTypeError(f"{text} is not a probability strictly between 0 and 1")
    return value


def threshold_arg(text: str) -> float:
    value = float(text)
    if not 0.0 <= value < 1.0:
        raise argparse.ArgumentTypeError(f"{text} is not a threshold in [0, 1)")
    return value


def engine_option_arg(text: str) -> tuple[str, Any]:
    key, sep, raw = text.partition("=")
    if not sep:
        raise argparse.ArgumentTypeError("engine options look like KEY=VALUE")
    try:
        value = json.loads(raw)
    except json.JSONDecodeError:
        value = raw
    return key.replace("-", "_"), value


def build_assess_parser(parser: argparse.ArgumentParser | None = None) -> argparse.ArgumentParser:
    p = parser or argparse.ArgumentParser(
        prog="fact-reasoner",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    data = p.add_argument_group("input and output")
    data.add_argument("--input-file", "--input_file", type=Path, help="JSONL (or JSON) records to assess")
    data.add_argument(
        "--output-dir", "--output_dir", type=Path, default=Path("fact_reasoner_output"),
        help="directory for <input>.fr<version>.jsonl, .summary.json and .errors.jsonl "
        "(default: %(default)s)",
    )
    data.add_argument("--output-file", "--output_file", type=Path, help="write results here instead")
    data.add_argument("--dataset-name", "--dataset_name", help="a label stored in the summary")
    data.add_argument("--overwrite", action="store_true", help="start over instead of resuming")
    data.add_argument("--limit", type=int, help="assess at most this many records")
    data.add_argument("--quiet", action="store_true", help="no progress bar or summary")

    single = p.add_argument_group("single response (instead of --input-file)")
    single.add_argument("--query", help="the question / prompt")
    single.add_argument("--response", help="the response to assess")
    single.add_argument("--topic", help="optional subject of the response")
    single.add_argument("--contexts", type=Path, help="JSONL or JSON list of {id?, title?, text} evidence")

    graph = p.add_argument_group("factor graph")
    graph.add_argument("--version", type=int, choices=(1, 2, 3), default=3,
                       help="FR1 (per-atom contexts), FR2 (all contexts) or FR3 (FR2 + context-context); default 3")
    graph.add_argument("--use-priors", "--use_priors", action="store_true",
                       help="use the factor tables that carry the target's prior (default: paper Table 1)")
    graph.add_argument("--context-prior", "--context_prior", type=probability_arg, default=0.9,
                       help="prior P(context is true) (default 0.9, IBM's code; the paper says 0.99)")
    graph.add_argument("--atom-prior", "--atom_prior", type=probability_arg, default=0.5,
                       help="prior P(atom is true) (default 0.5)")
    graph.add_argument("--min-relation-probability", type=threshold_arg, default=0.0,
                       help="drop entailments/contradictions whose NLI probability is at most this "
                       "(default 0: keep all, as the paper; 0.5 stops a weak 3-way 'entailment' from "
                       "counting against the atom)")
    graph.add_argument("--k", "--K", type=_k_value, default="median",
                       help="K of R@K/F1@K: an integer, 'median' (over the dataset's atoms) or "
                       "'half' (max(n//2, 1) per response); default median")

    inference = p.add_argument_group("inference")
    inference.add_argument("--engine", default="native", choices=available_engines(),
                           help="inference engine (default: native)")
    inference.add_argument("--engine-option", type=engine_option_arg, action="append", default=[],
                           metavar="KEY=VALUE", help="engine-specific option, e.g. method=lbp (repeatable)")
    inference.add_argument("--merlin-path", "--merlin_path", help="merlin binary (or set MERLIN_PATH)")
    inference.add_argument("--merlin-algorithm", default=None,
                           choices=("wmb", "bte", "cte", "ijgp", "lbp", "gibbs"), help="merlin algorithm (default wmb)")
    inference.add_argument("--ibound", type=int, help="merlin i-bound (default 6)")
    inference.add_argument("--iterations", type=int, help="merlin iterations")
    inference.add_argument("--merlin-timeout", type=float, help="seconds before merlin is stopped")
    inference.add_argument("--keep-uai", "--keep_uai", type=Path, help="keep merlin's UAI files in this directory")
    inference.add_argument("--export-uai", type=Path, metavar="DIR",
                           help="write each record's model as .uai (+ evidence, variable map) to DIR and run no inference")

    models = p.add_argument_group("language model, NLI and cache")
    models.add_argument("--backend", choices=("local", "openai"), default="local",
                        help="LLM backend: local (embedded GGUF, no server) or openai (any compatible server)")
    models.add_argument("--model", "--model_id",
                        help="model: for local, qwen2.5-coder-1.5b-instruct (default), smollm2-135m-instruct "
                        "or a .gguf path; for openai, the server's model name (or FACT_REASONER_MODEL)")
    models.add_argument("--base-url", "--base_url", help="OpenAI-compatible base URL (or FACT_REASONER_BASE_URL)")
    models.add_argument("--threads", type=int, help="CPU threads for the local model")
    models.add_argument("--nli", default="auto",
                        help="NLI backend: auto (record relations if present, else the default model), "
                        "precomputed, llm (the embedded LLM judge), align (the shipped alignment classifier), "
                        "cross-encoder")
    models.add_argument("--nli-model", "--nli_model",
                        help="align: model folder (default: the shipped one); cross-encoder: path or hub id")
    models.add_argument("--nli-prompt-version", "--nli_prompt_version", default="v1", choices=("v1", "v2"))
    models.add_argument("--atomizer-prompt-version", "--atomizer_prompt_version", default="v1", choices=("v1", "v2"))
    models.add_argument("--reviser-prompt-version", "--reviser_prompt_version", default="v1", choices=("v1",))
    models.add_argument("--nli-calibrate", action="store_true", help="contextual calibration of the LLM judge")
    models.add_argument("--nli-samples", type=int, default=5,
                        help="self-consistency samples when the backend gives no logprobs (default 5)")
    models.add_argument("--no-revise", action="store_true", help="skip the reviser")
    models.add_argument("--cache-dir", "--cache_dir", type=Path, help="model and cache directory")
    models.add_argument("--no-cache", action="store_true", help="do not read or write the model-call cache")

    retrieval = p.add_argument_group("retrieval (records without contexts)")
    retrieval.add_argument("--service-type", "--service_type", default="supplied",
                           help="where contexts come from: supplied (by the record; default), chroma, "
                           "bm25, hybrid, a registered retriever name or module:factory")
    retrieval.add_argument("--top-k", "--top_k", type=int, default=5, help="contexts per atom (default 5)")
    retrieval.add_argument("--store", help="retrieval store directory (see `fact-reasoner index`)")
    retrieval.add_argument("--collection", help="collection name in the store (default: default)")
    retrieval.add_argument("--topic-filter", "--topic_filter", action="store_true",
                           help="search only passages whose topic is the record's topic")
    retrieval.add_argument("--topic-in-query", "--topic_in_query", action="store_true",
                           help="prefix the topic to each atom's query when the atom does not name it")
    retrieval.add_argument("--retrieve-question", "--retrieve_question", action="store_true",
                           help="also retrieve contexts for the question (ids c_q_<j>)")
    retrieval.add_argument("--query-builder", "--query_builder", action="store_true",
                           help="let the LLM rewrite each atom into a search query")
    retrieval.add_argument("--summarise-contexts", "--summarise_contexts", action="store_true",
                           help="let the LLM summarise each context for its atom and drop irrelevant ones; "
                           "its confidence scales the context prior")
    return p


def config_from_args(args: argparse.Namespace) -> PipelineConfig:
    engine_options = dict(args.engine_option)
    if args.engine == "merlin":
        for key, value in (
            ("merlin_path", args.merlin_path),
            ("algorithm", args.merlin_algorithm),
            ("ibound", args.ibound),
            ("iterations", args.iterations),
            ("timeout", args.merlin_timeout),
            ("keep_uai", str(args.keep_uai) if args.keep_uai else None),
        ):
            if value is not None:
                engine_options.setdefault(key, value)
    # Flags are named after the config fields they set; a flag left unset keeps the default.
    values: dict[str, Any] = {
        name: getattr(args, name)
        for name in PipelineConfig.model_fields
        if getattr(args, name, None) is not None
    }
    values.update(engine_options=engine_options, revise=not args.no_revise, use_cache=not args.no_cache)
    return PipelineConfig(**values)


class _Terminated(KeyboardInterrupt):
    """SIGTERM, handled like Ctrl-C: stop after the current write, keep everything written."""


def _on_sigterm(signum: int, frame: Any) -> None:
    raise _Terminated()


def output_path(args: argparse.Namespace) -> Path:
    if args.output_file:
        return args.output_file
    stem = args.input_file.name
    for suffix in (".jsonl", ".json"):
        if stem.endswith(suffix):
            stem = stem[: -len(suffix)]
    return args.output_dir / f"{stem}.fr{args.version}.jsonl"


def run_dataset(args: argparse.Namespace, assessor) -> int:
    from tqdm import tqdm

    from .progress import progress_bar

    out_path = output_path(args)
    errors_path = out_path.with_suffix(".errors.jsonl")
    summary_path = out_path.with_suffix(".summary.json")
    if args.export_uai:
        return export_models(args, assessor)

    records = list(read_records(args.input_file))
    if args.limit is not None:
        records = records[: args.limit]
    valid = [r for r in records if isinstance(r, NumberedRecord)]
    bad = [r for r in records if isinstance(r, RecordError)]
    atom_counts = [len(r.record.atoms) for r in valid if r.record.atoms is not None]
    median = median_num_atoms(atom_counts)
    settings = assessor.settings()

    writer = ResultWriter(out_path, overwrite=args.overwrite)
    previous = {json.dumps(row.get("settings"), sort_keys=True) for row in writer.done.values()}
    if previous and previous != {json.dumps(settings, sort_keys=True)}:
        writer.close()
        print(
            f"error: {out_path} holds results made with other settings ({sorted(previous)[0]}); "
            "use --overwrite, or another --output-dir / --output-file",
            file=sys.stderr,
        )
        return 2
    if writer.repaired and not args.quiet:
        print(f"note: removed a torn last line from {out_path} (an interrupted write)", file=sys.stderr)

    failures: list[RecordError] = list(bad)
    for error in bad:
        print(f"error: {error}", file=sys.stderr)
    todo = [r for r in valid if r.key not in writer]
    skipped = len(valid) - len(todo)
    if skipped and not args.quiet:
        print(f"resuming: {skipped} record(s) already in {out_path}", file=sys.stderr)

    k_rule = args.k
    if k_rule == "median" and median is None:
        k_rule = "half"  # atoms are produced per record: no dataset median is known in advance
    previous_handler = signal.signal(signal.SIGTERM, _on_sigterm)
    interrupted = False
    setup_error: SetupError | None = None
    start = time.perf_counter()
    try:
        with progress_bar(len(todo), unit="record", quiet=args.quiet) as bar:
            for item in todo:
                try:
                    result = _assess_one(assessor, item, k_rule, median)
                except (KeyboardInterrupt, SetupError):
                    raise
                except Exception as error:  # one bad record must not stop the dataset
                    failure = RecordError(item.path, item.line, f"{type(error).__name__}: {error}")
                    failures.append(failure)
                    tqdm.write(f"error: {failure}", file=sys.stderr)
                else:
                    row = result.model_dump(mode="json")
                    row["source_line"] = item.line
                    writer.write(row)
                bar.update(1)
    except KeyboardInterrupt:
        interrupted = True
    except SetupError as error:
        setup_error = error
    finally:
        writer.close()
        signal.signal(signal.SIGTERM, previous_handler)

    if setup_error is not None:
        print(f"error: {setup_error}", file=sys.stderr)
        print(f"stopped: {len(writer.done)} record(s) kept in {out_path}", file=sys.stderr)
        return 2
    if failures:
        with open(errors_path, "w", encoding="utf-8") as handle:
            for failure in failures:
                handle.write(dumps_line({"path": failure.path, "line": failure.line, "message": failure.message}))
    summary = _dataset_summary(writer.done.values())
    summary.update(
        input_file=str(args.input_file),
        output_file=str(out_path),
        dataset_name=args.dataset_name,
        settings=settings,
        failed_records=len(failures),
        interrupted=interrupted,
        seconds=time.perf_counter() - start,
    )
    summary_path.write_text(dumps_line(summary))
    if not args.quiet:
        _print_summary(summary, failures, out_path)
    if interrupted:
        print(f"interrupted: {len(writer.done)} record(s) kept in {out_path}; rerun to resume", file=sys.stderr)
        return 130
    return 1 if failures else 0


def _assess_one(assessor, item: NumberedRecord, k_rule, median):
    return assessor.assess(item.record, k=k_rule, dataset_median_atoms=median, record_key=item.key)


def _dataset_summary(rows) -> dict[str, Any]:
    """The one dataset summary (:func:`~fact_reasoner.scores.summarize_rows`) of the written rows."""
    rows = list(rows)
    out = summarize_rows(rows).as_dict()
    out["engines"] = sorted({row["engine"]["algorithm"] for row in rows})
    return out


def _fmt(value: Any) -> str:
    if isinstance(value, list):  # the K values the records were scored with
        return describe_k(value)
    if isinstance(value, float):
        return "nan" if math.isnan(value) else f"{value:.4f}"
    return str(value)


def _print_summary(summary: dict[str, Any], failures: list[RecordError], out_path: Path) -> None:
    keys = [
        "num_records", "num_atoms", "k", "mean_factuality_score", "mean_f1_k",
        "mean_gold_factuality_score", "mae_factuality_score", "atom_accuracy",
        "atom_f1_supported", "atom_brier_score", "atom_ece", "failed_records", "seconds",
    ]
    print(f"results: {out_path}", file=sys.stderr)
    for key in keys:
        if summary.get(key) is not None:
            print(f"  {key:28s} {_fmt(summary[key])}", file=sys.stderr)
    for failure in failures[:10]:
        print(f"  failed: {failure}", file=sys.stderr)


def export_models(args: argparse.Namespace, assessor) -> int:
    """``--export-uai DIR``: write every record's model as UAI files, run no inference."""
    from merlin_bridge.uai import export_graph

    args.export_uai.mkdir(parents=True, exist_ok=True)
    status = 0
    for item in read_records(args.input_file):
        if isinstance(item, RecordError):
            print(f"error: {item}", file=sys.stderr)
            status = 1
            continue
        try:
            built, _, _ = assessor.build(item.record)
        except Exception as error:
            print(f"error: {item.path}:{item.line}: {type(error).__name__}: {error}", file=sys.stderr)
            status = 1
            continue
        stem = args.export_uai / f"line{item.line:05d}.fr{args.version}"
        written = export_graph(built.graph, stem)
        if not args.quiet:
            print(" ".join(str(p) for p in written))
    return status


def run_single(args: argparse.Namespace, assessor) -> int:
    from .schema import Context, InputRecord

    contexts = None
    if args.contexts:
        rows = json.loads(args.contexts.read_text()) if args.contexts.suffix == ".json" else [
            json.loads(line) for line in args.contexts.read_text().splitlines() if line.strip()
        ]
        contexts = [
            Context.model_validate({"id": row.get("id", f"c{i}"), **row}) for i, row in enumerate(rows)
        ]
    record = InputRecord(input=args.query or "", output=args.response, topic=args.topic, contexts=contexts)
    result = assessor.assess(record)
    line = dumps_line(result.model_dump(mode="json"))
    if args.output_file:
        args.output_file.parent.mkdir(parents=True, exist_ok=True)
        args.output_file.write_text(line)
    else:
        sys.stdout.write(line)
    return 0


def assess_main(argv: list[str]) -> int:
    parser = build_assess_parser()
    args = parser.parse_args(argv)
    if (args.input_file is None) == (args.response is None):
        parser.error("give either --input-file, or --response (with --query) for a single response")
    try:
        config = config_from_args(args)
    except ValueError as error:
        parser.error(str(error))
    from .pipeline import FactReasoner

    assessor = FactReasoner(config)
    if args.response is not None:
        try:
            return run_single(args, assessor)
        except SetupError as error:
            print(f"error: {error}", file=sys.stderr)
            return 2
    try:
        return run_dataset(args, assessor)
    except (FileNotFoundError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in PLUGIN_COMMANDS:
        try:
            module = importlib.import_module(PLUGIN_COMMANDS[argv[0]])
        except ImportError as error:
            print(f"error: `{argv[0]}` needs optional parts that are not installed: {error}", file=sys.stderr)
            return 2
        parser = argparse.ArgumentParser(prog="fact-reasoner")
        module.register(parser.add_subparsers(dest="command", required=True))
        args = parser.parse_args(argv)
        return int(args.func(args) or 0)
    if argv and argv[0] == "assess":
        argv = argv[1:]
    return assess_main(argv)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
