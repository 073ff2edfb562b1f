"""`unerase eval`: run a configuration over a labelled file and print how well it decided.

unerase eval FILE [--text-column C] [--label-column C] [--positive V[,V]] [--negative V[,V]]
                  [--lang-column C] [--group-column C] [--term-column C] [--span-column C] [--lang xx]
                  [--review-as positive|negative|separate|correct] [--worst N] [--json] [--report OUT.html]
                  [--config SETTINGS.toml] [--compare OTHER.toml] [--progress]
                  [--backend ...] [--model ...] ... (the model options of `unerase analyze`)

The file is read and checked completely before anything is analysed; a bad file stops with exit status 2
and a message naming the file, line and column. Low scores are never an error: the exit status is 0
whenever the evaluation ran.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO, Any

from engine.analysis import BackendRouter
from engine.cli.common import Progress, add_backend_arguments, check_concurrency
from engine.errors import UneraseError
from engine.evaluation import REVIEW_AS, EvaluationReport, Metrics, ReviewAs, evaluate, predict
from engine.labelled import DEFAULT_NEGATIVE, DEFAULT_POSITIVE, Columns, LabelledRow, Labels, read_labelled
from engine.pipeline import PipelineConfig, open_pipeline
from engine.scope import Scope

# Renders reports as HTML; the `unerase` program installs the web layer's renderer (the engine has no HTML).
ReportWriter = Callable[[Sequence[EvaluationReport], Sequence[PipelineConfig]], str]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", help="a labelled .csv or .jsonl file")
    parser.add_argument("--text-column", default="text", help="column (JSONL: key) holding the texts")
    parser.add_argument("--label-column", default="label", help="column holding the labels")
    parser.add_argument(
        "--positive",
        help=f"label values meaning hateful/contentious, comma-separated (default: {','.join(DEFAULT_POSITIVE)})",
    )
    parser.add_argument(
        "--negative",
        help="label values meaning acceptable, comma-separated (default with --positive: every other value; "
        f"without: {','.join(DEFAULT_NEGATIVE)})",
    )
    parser.add_argument("--lang-column", help="column holding language codes (else detected)")
    parser.add_argument("--group-column", help="column to break results down by (a source, a target group, ...)")
    parser.add_argument("--term-column", help="column listing the terms used contentiously, separated by ';'")
    parser.add_argument("--span-column", help="column listing contentious character spans 'start-end;...'")
    parser.add_argument("--lang", help="language of rows that do not give one; detected when omitted")
    parser.add_argument(
        "--review-as",
        choices=REVIEW_AS,
        default="separate",
        help="how needs_review counts: positive (as flagged), negative (as not flagged), "
        "separate (set aside; the default), correct (as its label says: reviewed and decided right)",
    )
    parser.add_argument("--worst", type=int, default=10, help="how many of the worst errors to show (each kind)")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--report", help="write a self-contained HTML report to this file")
    parser.add_argument("--config", help="take the configuration from a settings TOML file (docs/settings.md)")
    parser.add_argument("--compare", help="a second settings TOML file, run over the same rows and shown beside")
    parser.add_argument("--progress", action="store_true", help="draw the progress bar even when stderr is no terminal")
    add_backend_arguments(parser)


def labels_from(args: argparse.Namespace) -> Labels:
    def split(value: str | None) -> tuple[str, ...]:
        return tuple(v for v in (value or "").split(",") if v.strip())

    if args.positive is None:
        return Labels(DEFAULT_POSITIVE, split(args.negative) if args.negative is not None else DEFAULT_NEGATIVE)
    return Labels(split(args.positive), split(args.negative))


def configurations(args: argparse.Namespace) -> list[PipelineConfig]:
    base = PipelineConfig.from_args(args)
    if args.config:
        base = base.with_toml(args.config)
    configs = [base]
    if args.compare:
        configs.append(base.with_toml(args.compare))
        if configs[0].name == configs[1].name:
            configs[0] = dataclasses.replace(configs[0], name="first")
    return configs


async def run_evaluation(
    rows: Sequence[LabelledRow],
    config: PipelineConfig,
    *,
    review_as: ReviewAs = "separate",
    default_lang: str | None = None,
    scope: Scope | None = None,
    worst: int = 10,
    router: BackendRouter | None = None,
    progress: Callable[[], None] | None = None,
) -> EvaluationReport:
    """Analyse every row with the configuration and count (framework-free: the web page uses it too)."""
    async with open_pipeline(config, router=router) as analyzer:
        predictions, info = await predict(
            analyzer,
            [(row.text, row.lang or default_lang) for row in rows],
            scope=scope,
            concurrency=config.concurrency,
            progress=progress,
        )
    return evaluate(rows, predictions, info, review_as, worst=worst)


def cmd_eval(args: argparse.Namespace, report_writer: ReportWriter | None = None, scope: Scope | None = None) -> int:
    if args.worst < 0:
        raise UneraseError(f"--worst {args.worst} is not accepted; give 0 or more")
    check_concurrency(args)
    if args.report and report_writer is None:
        raise UneraseError("--report needs the web package (run the `unerase` program, not engine.cli)")
    columns = Columns(
        args.text_column, args.label_column, args.lang_column, args.group_column, args.term_column, args.span_column
    )
    rows = read_labelled(args.file, columns, labels_from(args))
    configs = configurations(args)
    reports = []
    for config in configs:
        progress = Progress.on_stderr(len(rows), args.progress)
        if len(configs) > 1:
            print(f"{config.name}:", file=sys.stderr)
        report = asyncio.run(
            run_evaluation(
                rows,
                config,
                review_as=args.review_as,
                default_lang=args.lang,
                scope=scope,
                worst=args.worst,
                progress=progress.step,
            )
        )
        progress.finish()
        reports.append(report)
    if args.report:
        assert report_writer is not None
        Path(args.report).write_text(report_writer(reports, configs), encoding="utf-8")
        print(f"report written to {args.report}", file=sys.stderr)
    if args.json:
        payload: Any = [
            {"name": c.name, "settings": c.describe(), **r.to_dict()} for c, r in zip(configs, reports, strict=True)
        ]
        json.dump(payload[0] if len(payload) == 1 else payload, sys.stdout, ensure_ascii=False, indent=2)
        print()
    else:
        print_reports(reports, configs, sys.stdout)
    return 0


# --- text output -------------------------------------------------------------------------------------


def percent(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.1f}%"


_FIGURES: tuple[tuple[str, Callable[[Metrics], str]], ...] = (
    ("rows", lambda m: str(m.rows)),
    ("counted", lambda m: str(m.counted)),
    ("accuracy", lambda m: percent(m.accuracy)),
    ("precision", lambda m: percent(m.precision)),
    ("recall", lambda m: percent(m.recall)),
    ("F1", lambda m: percent(m.f1)),
    ("deferral rate", lambda m: percent(m.deferral_rate)),
    ("errors", lambda m: str(m.errors)),
)


_ATTRIBUTES = {"accuracy": "accuracy", "precision": "precision", "recall": "recall", "F1": "f1"}


def _change(label: str, first: Metrics, second: Metrics) -> str:
    """The second configuration's figure minus the first's, in percentage points (rates) or rows (counts)."""
    if label == "deferral rate":
        a, b = first.deferral_rate, second.deferral_rate
    elif label in _ATTRIBUTES:
        a, b = getattr(first, _ATTRIBUTES[label]), getattr(second, _ATTRIBUTES[label])
    else:
        return ""
    return "–" if a is None or b is None else f"{100 * (b - a):+.1f} pt"


def _table(rows: Sequence[Sequence[str]], out: IO[str]) -> None:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip(), file=out)


def print_reports(reports: Sequence[EvaluationReport], configs: Sequence[PipelineConfig], out: IO[str]) -> None:
    names = [c.name for c in configs]
    review_as = reports[0].overall.review_as
    for config, report in zip(configs, reports, strict=True):
        info = report.info
        print(
            f"{config.name}: vocabulary {info.vocabulary_version[:12]}, prompts {info.prompt_version[:12]}, "
            f"models {', '.join(info.models) or 'none'}, mode {info.mode}, threshold {info.threshold}",
            file=out,
        )
    print(f"\nneeds_review counted as: {review_as}\n", file=out)
    lines = [["", *names, *(["change"] if len(reports) == 2 else [])]]
    for label, figure in _FIGURES:
        line = [label, *(figure(r.overall) for r in reports)]
        if len(reports) == 2:
            line.append(_change(label, reports[0].overall, reports[1].overall))
        lines.append(line)
    _table(lines, out)
    for config, report in zip(configs, reports, strict=True):
        print(f"\nconfusion table ({config.name}): label × decision", file=out)
        table = report.overall.table
        _table(
            [
                ["", "flagged", "not_flagged", "needs_review", "error"],
                *([gold, *(str(table[gold][o]) for o in ("flagged", "not_flagged", "needs_review", "error"))]
                  for gold in ("positive", "negative")),
            ],
            out,
        )  # fmt: skip
    for title, attribute in (("language", "by_language"), ("group", "by_group")):
        keys = sorted({k for r in reports for k in getattr(r, attribute)})
        if not keys:
            continue
        print(f"\nby {title} (precision / recall / F1 / deferral)", file=out)
        lines = [[title, "rows", *names]]
        for key in keys:
            cells = []
            for report in reports:
                m = getattr(report, attribute).get(key)
                cells.append(
                    "–"
                    if m is None
                    else f"{percent(m.precision)} / {percent(m.recall)} / {percent(m.f1)} / {percent(m.deferral_rate)}"
                )
            first = getattr(reports[0], attribute).get(key)
            lines.append([key, str(first.rows if first else ""), *cells])
        _table(lines, out)
    for config, report in zip(configs, reports, strict=True):
        label = f" ({config.name})" if len(configs) > 1 else ""
        if report.terms is not None:
            print(f"\nprecision per term{label}", file=out)
            _table(
                [
                    ["term", "hits", "contentious", "correct", "precision", "undetermined", "missed"],
                    *(
                        [t.term, str(t.hits), str(t.contentious), str(t.correct), percent(t.precision),
                         str(t.undetermined), str(t.missed)]
                        for t in report.terms
                    ),
                ],
                out,
            )  # fmt: skip
        for title, examples in (
            ("flagged but labelled acceptable", report.false_positives),
            ("not flagged but labelled hateful", report.false_negatives),
        ):
            if examples:
                print(f"\nworst errors{label}: {title}", file=out)
                for e in examples:
                    terms = f" [{', '.join(e.terms)}]" if e.terms else ""
                    print(f"  line {e.line} ({e.confidence:.2f}){terms}: {e.text[:160]}", file=out)
        for number, message in report.failures[:20]:
            print(f"  line {number}: analysis failed: {message}", file=out)
