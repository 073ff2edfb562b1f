"""`unerase audit`: the counterfactual fairness test (engine/audit.py) for a configuration.

unerase audit [--lang xx ...] [--templates FILE|FOLDER ...] [--alpha 0.05] [--json] [--report OUT.html]
              [--config SETTINGS.toml] [--progress] [--backend ...] [--model ...] ...

Exit status 0 whenever the audit ran, whatever it found; 2 for bad templates or options.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO

from engine.analysis import BackendRouter
from engine.audit import AuditReport, TemplateSet, cases, load_templates, score, shipped_templates
from engine.cli.common import Progress, add_backend_arguments
from engine.errors import UneraseError
from engine.evaluation import predict
from engine.pipeline import PipelineConfig, open_pipeline

AuditReportWriter = Callable[[AuditReport, PipelineConfig], str]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--lang", action="append", help="audit only this language (repeatable; default: all)")
    parser.add_argument(
        "--templates", action="append", help="a template file or folder (repeatable; default: the shipped audit/)"
    )
    parser.add_argument("--alpha", type=float, default=0.05, help="significance level before Bonferroni correction")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--report", help="write a self-contained HTML report to this file")
    parser.add_argument("--config", help="take the configuration from a settings TOML file (docs/settings.md)")
    parser.add_argument("--progress", action="store_true", help="draw the progress bar even when stderr is no terminal")
    add_backend_arguments(parser)


async def run_audit(
    sets: Sequence[TemplateSet],
    config: PipelineConfig,
    *,
    languages: Sequence[str] | None = None,
    alpha: float = 0.05,
    router: BackendRouter | None = None,
    progress: Callable[[], None] | None = None,
) -> AuditReport:
    all_cases = cases(sets, languages)
    if not all_cases:
        known = sorted({s.language for s in sets})
        raise UneraseError(f"no templates for {', '.join(languages or [])}; templates exist for {', '.join(known)}")
    async with open_pipeline(config, router=router) as analyzer:
        # a language the vocabularies lack would give a tuple of identical errors: "consistent", and meaningless
        supported = set(analyzer.detector.languages)
        skipped = tuple(sorted({c.language for c in all_cases} - supported))
        all_cases = [c for c in all_cases if c.language in supported]
        if progress is not None:
            for _ in range(len(cases(sets, languages)) - len(all_cases)):
                progress()
        predictions, info = await predict(
            analyzer, [(c.text, c.language) for c in all_cases], concurrency=config.concurrency, progress=progress
        )
    report = score(all_cases, predictions, info, alpha=alpha)
    return dataclasses.replace(report, skipped=skipped)


def cmd_audit(args: argparse.Namespace, report_writer: AuditReportWriter | None = None) -> int:
    if not 0.0 < args.alpha < 1.0:
        raise UneraseError(f"--alpha {args.alpha} is outside 0..1 (exclusive)")
    if args.report and report_writer is None:
        raise UneraseError("--report needs the web package (run the `unerase` program, not engine.cli)")
    config = PipelineConfig.from_args(args)
    if args.config:
        config = config.with_toml(args.config)
    sets = load_templates(args.templates or [shipped_templates()])
    total = len(cases(sets, args.lang))
    progress = Progress.on_stderr(total, args.progress)
    report = asyncio.run(run_audit(sets, config, languages=args.lang, alpha=args.alpha, progress=progress.step))
    progress.finish()
    if args.report:
        assert report_writer is not None
        Path(args.report).write_text(report_writer(report, config), encoding="utf-8")
        print(f"report written to {args.report}", file=sys.stderr)
    if args.json:
        json.dump({"settings": config.describe(), **report.to_dict()}, sys.stdout, ensure_ascii=False, indent=2)
        print()
    else:
        print_audit(report, sys.stdout)
    return 0


def print_audit(report: AuditReport, out: IO[str]) -> None:
    info = report.info
    print(
        f"vocabulary {info.vocabulary_version[:12]}, prompts {info.prompt_version[:12]}, "
        f"models {', '.join(info.models) or 'none'}, mode {info.mode}, threshold {info.threshold}",
        file=out,
    )
    print(f"consistency rate over all languages: {100 * report.consistency_rate:.1f}%", file=out)
    if report.skipped:
        print(f"skipped (no vocabulary for them): {', '.join(report.skipped)}", file=out)
    for lang in report.languages:
        kinds = ", ".join(f"{k} {c}/{t}" for k, (t, c) in lang.by_kind.items())
        print(
            f"\n{lang.language}: {lang.consistent}/{lang.tuples} tuples decided alike "
            f"({100 * lang.consistency_rate:.1f}%; {kinds})",
            file=out,
        )
        threshold = report.alpha / max(len(lang.groups), 1)
        heading = "  group                 flagged  review  deviations  Δconfidence  p-value"
        print(f"{heading}   (differs if p < {threshold:.4f})", file=out)
        for g in lang.groups:
            mark = "  ← treated differently" if g.treated_differently else ""
            print(
                f"  {g.group:<20}  {g.flagged:>7}  {g.needs_review:>6}  {g.deviations:>10}  "
                f"{g.mean_confidence_difference:>+11.3f}  {g.p_value:<8.4g}{mark}",
                file=out,
            )
        for flip in lang.flips[:10]:
            deviating = ", ".join(f"{g}: {label}" for g, label in flip.labels if label != flip.majority)
            print(f"  flip in {flip.template} (most: {flip.majority}): {deviating}", file=out)
        if lang.errors:
            print(f"  {lang.errors} texts could not be analysed", file=out)
