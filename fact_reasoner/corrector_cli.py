"""``fact-reasoner correct``: every response of a dataset corrected, cited and re-assessed.

The run is :func:`fact_reasoner.runner.run_dataset` with the corrector's job
(:class:`~fact_reasoner.corrector.CorrectJob`): the same input records, resume, progress bar,
row-by-row writing, ``.errors.jsonl`` and ``.summary.json`` as an assessment; what one record
goes through is in :mod:`fact_reasoner.corrector`.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from .cli_options import positive_int

DESCRIPTION = """\
Correct long-form responses: keep the supported atoms, rewrite or remove the others, cite the
contexts, and check the result by assessing it again.

Input: the same records as the assessment (JSONL or JSON, `input`, `output`, optionally
`atoms`, `contexts`, `relations`); each is assessed first with the settings below, so an
assessed output file is not an input (its rows lack the context texts). For each record:
- an atom with P(true) > 0.5 is kept; an unsupported atom that a context contradicts
  (P > 0.5) is rewritten the way that context says; any other unsupported atom is removed;
- sentences whose atoms are all kept stay word for word, sentences with nothing kept go, the
  others are rewritten by the language model (--backend local by default: the embedded model;
  --backend openai --base-url … for a better writer);
- the sentences left cite their contexts as [n], with a reference list;
- the corrected text is assessed again with the same settings and contexts (its atoms made
  afresh). A correction with any atom no context supports is refused: the record is written
  with correction.status "failed" and the reason, and counted in the summary.

Output: one JSON line per record, the assessment of the original response plus `correction`
(status, text, references, per-sentence diff, the changes with their evidence, precision and
length before/after). Rerunning the same command resumes. Exit status: 0 every record
corrected or unchanged, 1 a record failed (its correction or a stage), 2 the run stopped.

Note: a record's own `relations` judge only its original atoms; with --nli auto the corrected
text's atoms are judged by the model, so give --nli explicitly (e.g. cross-encoder) to have
the same judge before and after.
"""

EPILOG = """\
example:
  fact-reasoner correct --input-file bios.jsonl --output-dir out --version 2 --nli cross-encoder
"""


def register(subparsers: Any) -> None:
    """Add the ``correct`` sub-command to ``fact-reasoner``."""
    from .cli_options import add_config_arguments

    p = subparsers.add_parser(
        "correct",
        help="a corrected response with citations, re-assessed",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    data = p.add_argument_group("input and output")
    data.add_argument("--input-file", "--input_file", type=Path, required=True, help="JSONL (or JSON) records")
    data.add_argument(
        "--output-dir",
        "--output_dir",
        type=Path,
        default=Path("fact_reasoner_output"),
        help="directory for <input>.fr<version>.corrected.jsonl, .summary.json and .errors.jsonl "
        "(default: %(default)s)",
    )
    data.add_argument("--output-file", "--output_file", type=Path, help="write results here instead")
    data.add_argument("--dataset-name", "--dataset_name", help="a label stored in the summary")
    data.add_argument("--overwrite", action="store_true", help="start over instead of resuming")
    data.add_argument("--limit", type=positive_int, help="correct at most this many records (≥ 1)")
    data.add_argument("--quiet", action="store_true", help="no progress bar or summary")
    add_config_arguments(p)
    p.set_defaults(func=run, parser=p)


def output_file(args: argparse.Namespace, version: int) -> Path:
    """``--output-file``, or ``<output-dir>/<input stem>.fr<version>.corrected.jsonl``."""
    from .runner import default_output_file

    if args.output_file is not None:
        return Path(args.output_file)
    assessed = default_output_file(args.input_file, args.output_dir, version)
    return assessed.with_name(assessed.name[: -len(".jsonl")] + ".corrected.jsonl")


def run(args: argparse.Namespace) -> int:
    """Run ``fact-reasoner correct``; the exit status (see the description)."""
    from . import runner
    from .cli import _print_summary, said_interrupted, said_stopped
    from .cli_options import config_from_args
    from .corrector import CorrectJob, Corrector, correction_settings, correction_summary
    from .pipeline import FactReasoner

    config = config_from_args(args, args.parser)
    if args.input_file.is_dir():
        args.parser.error(f"argument --input-file: {args.input_file} is a directory, not a file")
    assessor = FactReasoner(config)
    # the rewriting and the re-assessment always ask the language model and the NLI judge
    assessor.stages.preflight(atomize=True, judge=True)
    corrector = Corrector.from_config(config, assessor)
    report = runner.run_dataset(
        assessor,
        args.input_file,
        output_file=output_file(args, config.graph.version),
        dataset_name=args.dataset_name,
        overwrite=args.overwrite,
        limit=args.limit,
        progress=not args.quiet,
        make_job=CorrectJob,
        job_state=corrector,
        settings=correction_settings(config),
        summarize=correction_summary,
    )
    if said_stopped(report):
        return 2
    counts = (report.summary or {}).get("corrections", {})
    if not args.quiet and report.summary is not None:
        _print_summary(report.summary, report.failures, report.output_file)
        for key, value in counts.items():
            shown = "-" if value is None else f"{value:.4f}" if isinstance(value, float) else str(value)
            print(f"  correction {key:17s} {shown}", file=sys.stderr)
    if said_interrupted(report):
        return 130
    return 1 if report.failures or counts.get("failed") else 0


__all__ = ["output_file", "register", "run"]
