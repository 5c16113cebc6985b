"""``fact-reasoner conformal``: fit a conformal filter on assessed rows of labelled records
(:mod:`fact_reasoner.conformal`); ``--conformal FILE`` applies it."""

from __future__ import annotations

import argparse
import hashlib
import sys
from pathlib import Path
from typing import Any

from ..conformal.calibration import (
    GUARANTEES,
    METHODS,
    ConformalFilter,
    fit_filter,
    posterior_settings,
    settings_differences,
)
from ..conformal.maths import error_spread, includes_false, kept
from ..errors import ConformalError, InputError, OutputError
from ..settings.cli_options import number, path_argument
from ..settings.fields import OpenProbability
from .base import Command, CommandParser

DESCRIPTION = """\
Fit a conformal filter: the threshold on a claim's posterior P(true) above which claims are kept,
so that, with the split-conformal finite-sample correction, the error of what is kept is at most
--alpha on answers like the calibration answers.

--gold: the rows `fact-reasoner` (or experiments/run_biographies.py) wrote for labelled records
(every atom with a gold `label` S or NS), all made with the same assessor, judge and settings.
--guarantee response (Mohri & Hashimoto, 2024): the probability that an answer's kept claims
include a false one is at most alpha. --guarantee claims (conformal risk control): the expected
share of false claims among an answer's kept claims is at most alpha. Both are marginal
guarantees, over the draw of the calibration answers and of the answer, for answers
exchangeable with the calibration answers (the same kind of question and source, assessed with
the same settings) — not a promise about each answer. --method adaptive (response only) lets
the threshold depend on the answer's number of claims and mean posterior (conditional conformal,
Cherian, Gibbs & Candès, 2024).

The file records the rows' assessor, judge and settings; `fact-reasoner --conformal FILE`
refuses a run made otherwise. Too few answers for alpha (n < 1/alpha - 1) is refused: the
threshold would be infinite. What the guarantee means and does not: docs/conformal.md.
"""

EPILOG = """\
example:
  fact-reasoner --version 2 --nli cross-encoder --input-file labelled.jsonl --output-file calibration_rows.jsonl
  fact-reasoner conformal --gold calibration_rows.jsonl --alpha 0.1 --output conformal.json
  fact-reasoner --version 2 --nli cross-encoder --input-file new.jsonl --conformal conformal.json
exit status: 0 written, 2 refused (too few or unlabelled answers, mixed settings, unreadable rows)
"""


def _rows(paths: list[Path]) -> tuple[list[tuple[str, dict[str, Any]]], list[dict[str, str]]]:
    """``(file:line, row)`` of every row, and each file with its SHA-256; any unreadable line is
    refused (a calibration set silently missing answers is another calibration set)."""
    from ..io import RecordError, read_json_values

    rows: list[tuple[str, dict[str, Any]]] = []
    files = []
    for path in paths:
        if not path.is_file():
            raise InputError("rows file not found" if not path.exists() else "not a file", path=path)
        files.append({"path": str(path), "sha256": hashlib.sha256(path.read_bytes()).hexdigest()})
        for item in read_json_values(path):
            if isinstance(item, RecordError):
                raise InputError(item.message, path=item.path, line=item.line)
            if not isinstance(item.data, dict):
                raise InputError("not an assessed row (a JSON object)", path=item.path, line=item.line)
            rows.append((f"{item.path}:{item.line}", item.data))
    if not rows:
        raise InputError("no rows to calibrate on", path=paths[0])
    return rows, files


def _one_kind(rows: list[tuple[str, dict[str, Any]]]) -> tuple[str, str | None, dict[str, Any]]:
    """The assessor, judge and settings every row shares; rows made otherwise are refused."""
    from ..report.rows import assessor_name, judge_of

    first_where, first = rows[0]
    assessor = assessor_name(first)
    settings = first.get("settings")
    if not isinstance(settings, dict):
        raise ConformalError(f"{first_where}: the row has no `settings`: which judge and settings made it is unknown")
    for where, row in rows[1:]:
        if assessor_name(row) != assessor:
            raise ConformalError(f"{where}: a row of {assessor_name(row)}, not {assessor} as {first_where}")
        differences = settings_differences(posterior_settings(row.get("settings")), posterior_settings(settings))
        if differences:
            shown = "; ".join(differences[:3]).replace("in the calibration rows", f"at {first_where}")
            raise ConformalError(
                f"{where}: made with other settings than {first_where} ({shown}); calibrate on rows of one "
                "assessor, judge and settings"
            )
    return assessor, judge_of(first), settings


class Conformal(Command):
    name = "conformal"
    summary = "fit a conformal filter on labelled rows: keep claims with a guaranteed error rate"
    description = DESCRIPTION
    epilog = EPILOG
    usage = (
        "fact-reasoner conformal --gold ROWS [ROWS …] --alpha A [--guarantee response|claims] "
        "[--method plain|adaptive] --output FILE"
    )
    basic = ("gold", "alpha", "guarantee", "method", "output", "quiet")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--gold",
            type=path_argument,
            nargs="+",
            required=True,
            metavar="ROWS",
            help="assessed rows of labelled records (JSONL), one assessor, judge and settings",
        )
        parser.add_argument(
            "--alpha",
            type=number(OpenProbability),
            required=True,
            metavar="A",
            help="the error rate to guarantee, in (0, 1) (e.g. 0.1)",
        )
        parser.add_argument(
            "--guarantee",
            choices=GUARANTEES,
            default="response",
            metavar="{response,claims}",
            help="response: P(an answer's kept claims include a false one) <= alpha; claims: the expected "
            "share of false claims among an answer's kept claims <= alpha (default: %(default)s)",
        )
        parser.add_argument(
            "--method",
            choices=METHODS,
            default="plain",
            help="plain: one threshold; adaptive (response only): a threshold that depends on the answer's "
            "number of claims and mean posterior (default: %(default)s)",
        )
        parser.add_argument(
            "--output", type=path_argument, required=True, metavar="FILE", help="the filter to write (JSON)"
        )
        parser.add_argument("--quiet", action="store_true", help="print nothing but errors")

    def run(self, args: argparse.Namespace, parser: CommandParser) -> int:
        from ..conformal.calibration import calibration_answers

        rows, files = _rows(args.gold)
        assessor, judge, settings = _one_kind(rows)
        answers = calibration_answers(rows)
        fitted = fit_filter(
            answers,
            args.alpha,
            args.guarantee,
            args.method,
            assessor=assessor,
            judge=judge,
            settings=settings,
            files=files,
        )
        try:
            args.output.parent.mkdir(parents=True, exist_ok=True)
            args.output.write_text(fitted.dumps(), encoding="utf-8")
        except OSError as error:
            raise OutputError(f"cannot write the filter: {error.strerror or error}", path=args.output) from None
        if not args.quiet:
            for line in summary_lines(fitted, [a.claims for a in answers]):
                print(line, file=sys.stderr)
            print(f"wrote {args.output}", file=sys.stderr)
        return 0


def summary_lines(fitted: ConformalFilter, answers: list[Any]) -> list[str]:
    """What was fitted, on what, and what it keeps of the calibration answers themselves."""
    c = fitted.calibration
    lines = [
        f"fitted on {c.answers} answers ({c.claims} claims, {c.false_claims} false) of {fitted.assessor}"
        + (f" · judge {fitted.judge}" if fitted.judge else "")
    ]
    if fitted.method == "plain" and fitted.threshold is not None:
        how = (
            f" (the {fitted.quantile_index}th smallest of the {c.answers} answers' largest false-claim posteriors: "
            f"k = ceil((n+1)(1-alpha)))"
            if fitted.quantile_index is not None
            else " (conformal risk control)"
        )
        lines.append(f"keeps a claim when its posterior is above {fitted.threshold:.4f}{how}")
    else:
        lines.append("keeps a claim when its posterior is above a threshold fitted for each answer (adaptive)")
    lines.append(f"guarantee: {fitted.statement()}")
    if fitted.guarantee == "response":
        mean, sd = error_spread(c.answers, fitted.alpha)
        lines.append(
            f"with {c.answers} calibration answers the error of a filter fitted this way varies with the calibration "
            f"set: mean {mean:.3f}, sd {sd:.3f} over calibration sets (Beta; more answers narrow it, docs/conformal.md)"
        )
    true_total = true_kept = wrong = 0
    for answer in answers:
        tau = fitted.threshold_for(answer.scores)
        flags = kept(answer.scores, tau)
        true_total += sum(answer.truths)
        true_kept += sum(k and t for k, t in zip(flags, answer.truths))
        wrong += includes_false(answer, tau)
    lines.append(
        f"on the calibration answers themselves (optimistic: they chose the threshold): {true_kept} of {true_total} "
        f"true claims kept, {wrong} of {len(answers)} answers keep a false claim; "
        "experiments/conformal_eval.py measures it on answers held out"
    )
    return lines


__all__ = ["Conformal"]
