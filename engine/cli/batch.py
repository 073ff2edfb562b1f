"""`unerase batch`: analyse every text of a CSV, JSONL or ZIP-of-.txt file.

unerase batch FILE [--format csv|jsonl|zip] [--text-column C] [--id-column C] [--lang-column C] [--lang xx]
                   [--fallback-lang xx] [--output OUT.jsonl|OUT.csv] [--progress] [--concurrency N]
                   [--backend none|llama-cpp|openai] [--model M] ... (the model options of `unerase analyze`)

The whole file is read and checked first (engine.batch), so a bad file stops with exit status 2 before
anything is analysed or written. Records are then analysed concurrently and the results are written in
input order, one per record, each with its id and line; a record that cannot be analysed gives a result
with an "error" object instead of stopping the run. A record whose language is neither given nor detectable
(a short title) is analysed in the fallback language, and its result says so (engine.batch_language).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import csv
import json
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, Any

from engine.analysis import Analyzer
from engine.batch import (
    FORMATS,
    RESULT_COLUMNS,
    BatchLimits,
    BatchTooLarge,
    Record,
    RowError,
    detect_format,
    read_records,
    result_row,
)
from engine.batch_language import analyse_record, default_fallback, noted
from engine.cli.common import Progress, add_backend_arguments, check_concurrency, open_analyzer, vocabulary
from engine.cli.runner import Result, run_in_order
from engine.detector import Detector
from engine.errors import UneraseError
from engine.result import summary

_OUTPUT_FORMATS = {".jsonl": "jsonl", ".ndjson": "jsonl", ".csv": "csv"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", help='a .csv, .jsonl or .zip (of .txt files) to analyse ("-" for stdin)')
    parser.add_argument("--format", choices=FORMATS, help="default: from the extension, else from the content")
    parser.add_argument("--text-column", help="CSV column holding the texts (default: the one named 'text')")
    parser.add_argument("--id-column", help="CSV column holding record ids (default: the line number)")
    parser.add_argument("--lang-column", help="CSV column holding language codes")
    parser.add_argument("--lang", help="language of records that do not give one; detected when omitted")
    parser.add_argument(
        "--fallback-lang",
        help="language of records whose language cannot be detected (short texts such as titles); "
        "default: en when loaded, else the first loaded language; 'none': such records fail",
    )
    parser.add_argument("--output", help="OUT.jsonl or OUT.csv, by extension (default: JSONL on stdout)")
    parser.add_argument("--progress", action="store_true", help="draw the progress bar even when stderr is no terminal")
    add_backend_arguments(parser)


def cmd_batch(args: argparse.Namespace) -> int:
    check_concurrency(args)
    output_format = _output_format(args.output)
    limits = BatchLimits()
    data = _read_input(args.file, limits)
    fmt = args.format or detect_format(args.file, data[:4096])
    # Listing the records up front gives the progress bar its total; the size limits bound the memory this takes.
    items = list(
        read_records(
            data,
            fmt,
            text_column=args.text_column,
            id_column=args.id_column,
            lang_column=args.lang_column,
            limits=limits,
        )
    )
    del data
    detector = Detector(vocabulary(args.vocab))
    args.fallback_lang = _fallback(args.fallback_lang, detector.languages)
    progress = Progress.on_stderr(len(items), args.progress)
    started = time.perf_counter()
    with _open_sink(args.output, output_format) as write:
        analysed, failed = asyncio.run(_run(args, detector, items, write, progress))
    progress.finish()
    notice = " (see output)" if failed else ""
    print(
        f"{len(items)} rows: {analysed} analysed, {failed} errors{notice}, {time.perf_counter() - started:.1f} s",
        file=sys.stderr,
    )
    return 0


def _output_format(name: str | None) -> str:
    if name in (None, "-"):
        return "jsonl"
    suffix = Path(name).suffix.lower()
    if suffix not in _OUTPUT_FORMATS:
        raise UneraseError(
            f"--output {name!r}: the format comes from the extension; accepted: {', '.join(_OUTPUT_FORMATS)}"
        )
    return _OUTPUT_FORMATS[suffix]


def _read_input(name: str, limits: BatchLimits) -> bytes:
    if name == "-":
        # One byte over the limit is enough for read_records to report the file as too large.
        return sys.stdin.buffer.read(limits.max_bytes + 1)
    path = Path(name)
    try:
        size = path.stat().st_size
        if size > limits.max_bytes:
            raise BatchTooLarge(f"{name!r} has {size:,} bytes; at most {limits.max_bytes:,} are accepted")
        return path.read_bytes()
    except OSError as exc:
        raise UneraseError(f"cannot read {name!r}: {exc.strerror or exc}") from None


@contextlib.contextmanager
def _open_sink(name: str | None, fmt: str) -> Iterator[Callable[[Mapping[str, Any]], None]]:
    """A function writing one result to the output, which is flushed and closed on exit."""
    with contextlib.ExitStack() as stack:
        out: IO[str] = (
            sys.stdout
            if name in (None, "-")
            else stack.enter_context(open(name, "w", encoding="utf-8", newline="" if fmt == "csv" else None))
        )
        writer = csv.writer(out)

        def write(result: Mapping[str, Any]) -> None:
            if fmt == "csv":
                writer.writerow(result_row(result))
            else:
                out.write(json.dumps(result, ensure_ascii=False) + "\n")

        if fmt == "csv":
            writer.writerow(RESULT_COLUMNS)
        yield write
        out.flush()


async def _analyse(analyzer: Analyzer, item: Record | RowError, args: argparse.Namespace) -> Result:
    if isinstance(item, RowError):
        return {"id": item.id, "line": item.line, "error": {"code": "invalid-record", "message": item.message}}
    try:
        events, fallback = await analyse_record(
            analyzer, item.text, item.lang or args.lang, args.mode, getattr(args, "fallback_lang", None)
        )
    except UneraseError as exc:
        return {"id": item.id, "line": item.line, "error": {"code": exc.code, "message": exc.message}}
    result = noted(summary(events, item.id), fallback)
    return {"id": result.pop("id"), "line": item.line, **result}


def _fallback(wanted: str | None, languages: Sequence[str]) -> str | None:
    if wanted is None:
        return default_fallback(languages)
    if wanted.strip().lower() == "none":
        return None
    if wanted not in languages:
        raise UneraseError(f"--fallback-lang {wanted!r} is not loaded; accepted: {', '.join(languages)} or none")
    return wanted


async def _run(
    args: argparse.Namespace,
    detector: Detector,
    items: Sequence[Record | RowError],
    write: Callable[[Mapping[str, Any]], None],
    progress: Progress,
) -> tuple[int, int]:
    """At most --concurrency records in flight; results written in input order. Returns (analysed, failed)."""

    def emit(result: Result) -> None:
        write(result)
        progress.step()

    async with open_analyzer(args, detector) as analyzer:
        return await run_in_order(
            items, lambda item: _analyse(analyzer, item, args), emit, concurrency=args.concurrency
        )
