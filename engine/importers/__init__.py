"""Importers turn published vocabularies into unerase's model (engine.vocabulary.model).

Each importer is a function `(path, language) -> Vocabulary`; `language` overrides what the
importer would infer from the file (name prefix, URIs, language tags). Bad input raises
ImportFormatError naming the file, the line when there is one, and what is accepted.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from engine.errors import ImportFormatError
from engine.importers.debias_csv import import_debias_csv
from engine.importers.debias_skos import import_debias_skos
from engine.importers.detoex import import_detoex_csv, import_detoex_pickle
from engine.vocabulary.model import Vocabulary

Importer = Callable[[Path, "str | None"], Vocabulary]

IMPORT_FORMATS: dict[str, Importer] = {
    "debias-csv": import_debias_csv,
    "debias-skos": import_debias_skos,
    "detoex-csv": import_detoex_csv,
    "detoex-pickle": import_detoex_pickle,
}


def import_vocabulary(path: str | Path, fmt: str, language: str | None = None) -> Vocabulary:
    """Import `path` in the format `fmt` (a key of IMPORT_FORMATS)."""
    importer = IMPORT_FORMATS.get(fmt)
    if importer is None:
        raise ImportFormatError(f"unknown import format '{fmt}'; accepted: {', '.join(IMPORT_FORMATS)}", path=str(path))
    return importer(Path(path), language)


__all__ = ["IMPORT_FORMATS", "Importer", "import_vocabulary"]
