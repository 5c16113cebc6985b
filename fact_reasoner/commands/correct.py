"""``fact-reasoner correct``: every response of a dataset corrected, cited and re-assessed.

The run is :func:`fact_reasoner.runner.run_dataset` with the corrector's job
(:class:`~fact_reasoner.correction.corrector.CorrectJob`): the same input records, resume, progress bar,
row-by-row writing, ``.errors.jsonl`` and ``.summary.json`` as an assessment; what one record
goes through is in :mod:`fact_reasoner.correction.corrector`.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from .. import runner
from .assess import add_dataset_arguments
from .assess import summary_lines as assessment_lines
from .base import Command, CommandParser, finish_run, input_problems

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
corrected or unchanged, 1 a record failed (its correction or a stage), 2 the run stopped,
130 interrupted.

Note: a record's own `relations` judge only its original atoms; with --nli auto the corrected
text's atoms are judged by the model, so give --nli explicitly (e.g. cross-encoder) to have
the same judge before and after.
"""

EPILOG = """\
example:
  fact-reasoner correct --input-file fact_reasoner/examples/bios_with_relations.jsonl \\
      --output-dir out --version 2 --nli cross-encoder
"""


def output_file(args: argparse.Namespace, version: int) -> Path:
    """``--output-file``, or ``<output-dir>/<input stem>.fr<version>.corrected.jsonl``."""
    if args.output_file is not None:
        return Path(args.output_file)
    assessed = runner.default_output_file(args.input_file, args.output_dir, version)
    return assessed.with_name(assessed.name[: -len(".jsonl")] + ".corrected.jsonl")


#: the refused corrections the summary lists one by one (the rest are counted)
SHOW_REFUSED = 5


def summary_lines(report: runner.RunReport) -> list[str]:
    """The assessment's summary (its ``failed_records`` counts the refused corrections too),
    then the corrections: how many were corrected, unchanged or refused (each refused one by
    line and reason), precision and length before and after (over the records corrected or
    unchanged), the atoms rewritten and removed. Nothing but the first line when no record was
    written."""
    lines = assessment_lines(report)
    counts = (report.summary or {}).get("corrections")
    if not report.rows or not counts:
        return lines
    refused = [row for row in report.rows if (row.get("correction") or {}).get("status") == "failed"]
    delivered = counts["corrected"] + counts["unchanged"]
    lines.append(
        f"  corrections                  corrected {counts['corrected']} · unchanged {counts['unchanged']} · "
        f"refused {counts['failed']} (failed_records {len(report.failures) + len(refused)}: {len(refused)} refused, "
        f"{len(report.failures)} not assessed)"
    )
    for row in refused[:SHOW_REFUSED]:
        lines.append(f"  refused: line {row.get('source_line')}: {row['correction'].get('reason')}")
    if len(refused) > SHOW_REFUSED:
        lines.append(f"  … and {len(refused) - SHOW_REFUSED} more (correction.reason in each row)")
    if delivered:
        lines.append(
            f"  precision before → after    {_figure(counts['mean_precision_before'])} → "
            f"{_figure(counts['mean_precision_after'])} (over the {delivered} corrected or unchanged)"
        )
        lines.append(
            f"  characters before → after   {_figure(counts['mean_chars_before'], 0)} → "
            f"{_figure(counts['mean_chars_after'], 0)}"
        )
    lines.append(
        f"  atoms rewritten · removed    {counts['atoms_rewritten']} · {counts['atoms_removed']}; unsupported after "
        f"{counts['unsupported_atoms_after']} ({counts['introduced_unsupported_atoms']} introduced)"
    )
    return lines


def _figure(value: float | None, decimals: int = 4) -> str:
    return "—" if value is None else f"{value:.{decimals}f}"


class Correct(Command):
    name = "correct"
    summary = "a corrected response with citations, re-assessed"
    description = DESCRIPTION
    epilog = EPILOG
    usage = "fact-reasoner correct --input-file FILE [options]"
    basic = ("input_file", "output_dir", "version", "nli", "backend", "model", "base_url", "overwrite", "quiet")
    settings_groups = ("pipeline", "graph", "scores", "engine", "models", "retrieval", "cache", "execution", "gate")

    def add_arguments(self, parser: CommandParser) -> None:
        add_dataset_arguments(parser, verb="correct", outputs="<input>.fr<version>.corrected.jsonl")

    def run(self, args: argparse.Namespace, parser: CommandParser) -> int:
        from ..correction.corrector import CorrectJob, Corrector
        from ..correction.result import correction_settings, correction_summary, failed_corrections
        from ..reasoner import FactReasoner

        if args.input_file is None:
            parser.error("the following arguments are required: --input-file")
        config = self.settings(args, parser)
        for problem in input_problems("--input-file", args.input_file):
            parser.error(problem)
        assessor = FactReasoner(config)
        # the rewriting and the re-assessment always ask the language model and the NLI judge
        assessor.stages.preflight(atomize=True, judge=True)
        corrector = Corrector.from_config(config, assessor)
        job = runner.AssessDataset(
            assessor=assessor,
            input_file=args.input_file,
            output_file=output_file(args, config.graph.version),
            dataset_name=args.dataset_name,
            overwrite=args.overwrite,
            limit=args.limit,
            progress=not args.quiet,
            make_job=CorrectJob,
            job_state=corrector,
            row_settings=correction_settings(assessor.settings()),
            summarize=correction_summary,
            count_failed=failed_corrections,
        )
        report = runner.run_dataset(job)
        return finish_run(
            report,
            quiet=args.quiet,
            argv=args.argv,
            summary_lines=summary_lines,
            failed=bool(report.failures or failed_corrections(list(report.rows))),
        )


__all__ = ["Correct", "output_file", "summary_lines"]
