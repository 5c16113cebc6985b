"""``fact-reasoner report``: one self-contained HTML page of result files
(:func:`fact_reasoner.report.build_report`)."""

from __future__ import annotations

import argparse
import sys

from ..errors import OutputError
from ..io import RecordError
from ..settings.cli_options import number, path_argument
from ..settings.fields import Count
from .base import Command, CommandParser

EPILOG = """\
example (after `fact-reasoner --input-file fact_reasoner/examples/bios_with_relations.jsonl --output-dir out`
with --version 2, then --version 3):
  fact-reasoner report out/bios_with_relations.fr2.jsonl out/bios_with_relations.fr3.jsonl \\
      --input-file fact_reasoner/examples/bios_with_relations.jsonl -o report.html
exit status: 0 done, 1 a line could not be read (the page shows the others), 2 no page written
"""


class Report(Command):
    name = "report"
    summary = "a self-contained HTML report of result files"
    description = (
        "Write one self-contained HTML page (tables, plots, atoms coloured by posterior, evidence) of the "
        "result files of fact-reasoner (assess) and fact-reasoner correct. Runs of one FR version with "
        "different judges or settings are told apart by them. A line that cannot be read is named as "
        "file:line and left out (exit status 1); the page is made of the others."
    )
    usage = "fact-reasoner report RESULTS.jsonl [RESULTS.jsonl …] -o REPORT.html [options]"
    epilog = EPILOG
    basic = ("results", "output", "input_file", "title", "max_records")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("results", type=path_argument, nargs="+", help="result JSONL files (one or more assessors)")
        parser.add_argument("-o", "--output", type=path_argument, required=True, help="the HTML file to write")
        parser.add_argument(
            "--input-file",
            type=path_argument,
            help="the input records the results came from (for context texts), same file as the run",
        )
        parser.add_argument("--title", default="FactReasoner report", help="the page's title (default: %(default)s)")
        parser.add_argument(
            "--max-records", type=number(Count), metavar="N", help="show only the first N responses in detail (≥ 1)"
        )
        parser.add_argument(
            "--max-evidence",
            type=number(Count),
            default=8,
            metavar="N",
            help="contexts listed per atom (≥ 1; default 8)",
        )

    def run(self, args: argparse.Namespace, parser: CommandParser) -> int:
        """Read the result files, write the HTML page. A line that cannot be read is printed as
        ``error: file:line: problem``, the page is made of the others and the exit status is 1;
        a results or input file that cannot be used at all raises
        :class:`~fact_reasoner.errors.InputError` (one line, exit 2)."""
        from ..report import build_report

        unreadable: list[RecordError] = []
        try:
            page = build_report(
                args.results, args.input_file, args.title, args.max_records, args.max_evidence, failures=unreadable
            )
        finally:
            for failure in unreadable:
                print(f"error: {failure}", file=sys.stderr)
        try:
            args.output.parent.mkdir(parents=True, exist_ok=True)
            args.output.write_text(page, encoding="utf-8")
        except OSError as error:  # a directory where the page goes, a file where its folder goes
            raise OutputError(f"cannot write the report: {error.strerror or error}", path=args.output) from None
        print(f"wrote {args.output} ({len(page.encode('utf-8')) / 1e6:.1f} MB)", file=sys.stderr)
        if unreadable:
            print(
                f"failed: {len(unreadable)} unreadable line(s), listed above; the page shows the others",
                file=sys.stderr,
            )
            return 1
        return 0


__all__ = ["Report"]
