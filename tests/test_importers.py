"""Importers: DE-BIAS CSV, DETOEX CSV and pickle, error reporting, and the YAML round trip.

Fixtures in tests/fixtures/ are invented; tests against the published vocabularies read
../shared/data and skip when it is absent (a fresh clone has no ../shared).
"""

from __future__ import annotations

import csv
import os
import pickle
import shutil
from collections import OrderedDict
from pathlib import Path

import pytest

from engine.errors import ImportFormatError
from engine.importers import IMPORT_FORMATS, import_vocabulary
from engine.importers._common import merge_suggestions, slugify
from engine.importers.detoex import import_detoex_csv, import_detoex_pickle
from engine.vocabulary.loader import load_vocabulary
from engine.vocabulary.model import CATEGORIES, Vocabulary
from engine.vocabulary.writer import write_vocabulary

FIXTURES = Path(__file__).parent / "fixtures"
DEBIAS_SAMPLE = FIXTURES / "en_debias-sample.csv"
DETOEX_SAMPLE = FIXTURES / "en_detoex-sample.csv"
SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def shared(subfolder: str) -> Path:
    folder = SHARED / subfolder
    if not folder.is_dir():
        pytest.skip(f"../shared/data not found: {folder} (the published vocabularies are not part of the project)")
    return folder


def round_trip(vocabulary: Vocabulary, out: Path) -> Vocabulary:
    write_vocabulary(vocabulary, out)
    return load_vocabulary(out)


# --- DE-BIAS CSV -------------------------------------------------------------------------


def test_import_formats_are_registered() -> None:
    assert set(IMPORT_FORMATS) == {"debias-csv", "debias-skos", "detoex-csv", "detoex-pickle"}


def test_unknown_format_names_the_accepted_ones() -> None:
    with pytest.raises(ImportFormatError, match="accepted: debias-csv, debias-skos, detoex-csv, detoex-pickle"):
        import_vocabulary(DEBIAS_SAMPLE, "excel")


def test_debias_rows_are_grouped_by_uri_and_shared_context() -> None:
    vocabulary = import_vocabulary(DEBIAS_SAMPLE, "debias-csv")
    assert vocabulary.languages == ("en",)
    assert [i.id for i in vocabulary.issues] == ["debias-en-savage", "debias-en-exotic", "debias-en-half-breed"]
    savage = vocabulary.issue("debias-en-savage")
    assert [(t.literal, t.ambiguous, t.uri) for t in savage.terms] == [
        ("Savage", True, "http://example.org/debias/t_1_en"),
        ("Savages", False, "http://example.org/debias/t_2_en"),
    ]
    assert savage.terms[0].id == "debias-en-savage#Savage"
    assert savage.categories == ("other",)
    assert savage.uri == "urn:unerase:en:debias-en-savage"
    # the repeated (uri, source) rows give each citation once, in file order
    assert savage.sources == (
        "Sample Guide A, 2020, https://example.org/guide-a.",
        "Sample Glossary B, n.d., https://example.org/glossary-b.",
    )
    assert savage.description.startswith("Invented sample text: once used by colonial writers")


def test_debias_suggestions_limited_to_some_terms_name_them() -> None:
    exotic = import_vocabulary(DEBIAS_SAMPLE, "debias-csv").issue("debias-en-exotic")
    assert exotic.suggestion_note == (
        "Invented sample advice: use with caution when describing people. "
        "For “Exotic”: Invented sample advice: the word is unproblematic for plants and animals."
    )


def test_merge_suggestions_keeps_shared_notes_plain() -> None:
    assert merge_suggestions([("a", ["x"]), ("b", ["x"])]) == "x"
    assert merge_suggestions([("a", ["x", "y"]), ("b", ["x"])]) == "x For “a”: y"
    assert merge_suggestions([]) == ""


def test_debias_language_from_uri_when_file_name_has_none(tmp_path: Path) -> None:
    copy = tmp_path / "sample.csv"
    shutil.copy(DEBIAS_SAMPLE, copy)
    assert import_vocabulary(copy, "debias-csv").languages == ("en",)


def test_explicit_language_wins(tmp_path: Path) -> None:
    vocabulary = import_vocabulary(DEBIAS_SAMPLE, "debias-csv", language="fr")
    assert vocabulary.languages == ("fr",)
    assert vocabulary.issues[0].id == "debias-fr-savage"


def test_debias_language_unknown_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "sample.csv"
    path.write_text(
        "uri,term,context,suggestion,source,disambiguation\nhttp://x/t_1,Word,c,s,src,0\n", encoding="utf-8"
    )
    with pytest.raises(ImportFormatError, match="give the language explicitly"):
        import_vocabulary(path, "debias-csv")


def test_debias_rows_of_one_uri_must_agree(tmp_path: Path) -> None:
    path = tmp_path / "en_x.csv"
    path.write_text(
        "uri,term,context,suggestion,source,disambiguation\nu1,Word,c,s,a,0\nu1,Word,c,s,b,1\n", encoding="utf-8"
    )
    with pytest.raises(ImportFormatError, match=r"en_x\.csv:3: .*must agree"):
        import_vocabulary(path, "debias-csv")


# --- bad files -----------------------------------------------------------------------------

DEBIAS_HEADER = "uri,term,context,suggestion,source,disambiguation"
DETOEX_HEADER = "term,lemmas,description,categories,source"
BAD_FILES = [
    pytest.param(b"", 1, "the file is empty; expected a comma-separated header", id="empty"),
    pytest.param(b"   \n\n", 1, "the file is empty", id="blank"),
    pytest.param(b"uri,term,context\nu,t,c\n", 1, "missing column(s) suggestion, source, disambiguation", id="missing"),
    pytest.param(b"uri;term;context;suggestion;source;disambiguation\n", 1, "separated by commas", id="semicolons"),
    pytest.param(
        f"{DEBIAS_HEADER}\nu1,Word,c,s,src,0\nu2,Caf\xe9,c,s,src,0\n".encode("latin-1"), 3, "not UTF-8", id="latin-1"
    ),
    pytest.param(f"{DEBIAS_HEADER}\nu1,Word,c,s,src\n".encode(), 2, "has 5 fields but the header has 6", id="short"),
    pytest.param(f"{DEBIAS_HEADER}\nu1,Word,c,s,src,maybe\n".encode(), 2, "accepted: 1 (ambiguous)", id="flag"),
    pytest.param(f"{DEBIAS_HEADER}\nu1,,c,s,src,0\n".encode(), 2, "the column 'term' is empty", id="no-term"),
    pytest.param(f'{DEBIAS_HEADER}\nu1,"Word,c,s,src,0\n'.encode(), 2, "not valid CSV", id="open-quote"),
    pytest.param(f"{DEBIAS_HEADER}\n".encode(), None, "header but no rows", id="no-rows"),
]


@pytest.mark.parametrize(("content", "line", "reason"), BAD_FILES)
def test_bad_debias_files_name_file_line_and_what_is_accepted(
    tmp_path: Path, content: bytes, line: int | None, reason: str
) -> None:
    path = tmp_path / "en_bad.csv"
    path.write_bytes(content)
    with pytest.raises(ImportFormatError) as caught:
        import_vocabulary(path, "debias-csv")
    error = caught.value
    assert error.path == str(path)
    assert error.line == line
    assert reason in error.reason
    assert str(error).startswith(f"{path}:{line}: " if line else f"{path}: ")


@pytest.mark.parametrize(
    ("content", "line", "reason"),
    [
        pytest.param(b"", 1, "columns term, lemmas, description, categories, source", id="empty"),
        pytest.param(b"term\tlemmas\tdescription\tcategories\tsource\n", 1, "not ';', tabs", id="tabs"),
        pytest.param(b"term,lemmas,description,source\nx,x,d,s\n", 1, "missing column(s) categories", id="missing"),
        pytest.param(f"{DETOEX_HEADER}\nok,ok,d,Age,s\n\xff,x,d,Age,s\n".encode("latin-1"), 3, "UTF-8", id="bytes"),
        pytest.param(f"{DETOEX_HEADER}\nw,w,d,Hair Colour,s\n".encode(), 2, "unknown category 'Hair Colour'", id="cat"),
    ],
)
def test_bad_detoex_files(tmp_path: Path, content: bytes, line: int, reason: str) -> None:
    path = tmp_path / "en_bad.csv"
    path.write_bytes(content)
    with pytest.raises(ImportFormatError) as caught:
        import_vocabulary(path, "detoex-csv")
    assert (caught.value.path, caught.value.line) == (str(path), line)
    assert reason in caught.value.reason


def test_unknown_category_error_lists_accepted_values(tmp_path: Path) -> None:
    path = tmp_path / "en_bad.csv"
    path.write_text(f"{DETOEX_HEADER}\nw,w,d,Hair Colour,s\n", encoding="utf-8")
    with pytest.raises(ImportFormatError, match=r"accepted: .*Political Affiliation.*Socioeconomic"):
        import_vocabulary(path, "detoex-csv")


def test_missing_file_is_an_import_error(tmp_path: Path) -> None:
    for fmt in IMPORT_FORMATS:
        with pytest.raises(ImportFormatError, match="no such file"):
            import_vocabulary(tmp_path / "nothing.csv", fmt)


# --- DETOEX CSV ------------------------------------------------------------------------------


def test_detoex_rows_become_one_issue_each_with_mapped_categories() -> None:
    vocabulary = import_vocabulary(DETOEX_SAMPLE, "detoex-csv")
    assert [i.id for i in vocabulary.issues] == [
        "detoex-en-ampleton",
        "detoex-en-bean-counter-bro",
        "detoex-en-bean-counter-bro-2",
        "detoex-en-copper-top",
        "detoex-en-badge-goon",
    ]
    by_id = {i.id: i for i in vocabulary.issues}
    assert by_id["detoex-en-ampleton"].categories == ("religion",)
    assert by_id["detoex-en-bean-counter-bro"].categories == ("socioeconomic-status", "political-affiliation")
    assert by_id["detoex-en-bean-counter-bro-2"].categories == ("socioeconomic-status",)
    assert by_id["detoex-en-copper-top"].categories == ("other",)  # empty in the source
    assert by_id["detoex-en-badge-goon"].categories == ("other",)  # Public Institutions
    issue = by_id["detoex-en-ampleton"]
    assert [t.literal for t in issue.terms] == ["$ampleton"]
    assert issue.terms[0].uri == issue.sources[0] == "https://en.wiktionary.org/wiki/$ampleton"
    assert not issue.terms[0].ambiguous


def test_slugs_cover_accents_and_greek() -> None:
    assert slugify("Femme racisée") == "femme-racisee"
    assert slugify("άκαυλος") == "akaylos"
    assert slugify("51e État") == "51e-etat"


def test_detoex_language_from_wiktionary_host(tmp_path: Path) -> None:
    path = tmp_path / "vocabulary.csv"
    path.write_text(f"{DETOEX_HEADER}\nmot,mot,d,Age,https://fr.wiktionary.org/wiki/mot\n", encoding="utf-8")
    assert import_vocabulary(path, "detoex-csv").languages == ("fr",)


# --- DETOEX pickle ---------------------------------------------------------------------------


def sample_entries() -> list[tuple[str, str, str, list[str], str]]:
    """(term, lemmas, description, categories, source) of the DETOEX fixture."""
    with DETOEX_SAMPLE.open(encoding="utf-8", newline="") as handle:
        return [
            (r["term"], r["lemmas"], r["description"], [c for c in r["categories"].split(";") if c], r["source"])
            for r in csv.DictReader(handle)
        ]


def detoex_layout() -> dict[str, list[list[object]]]:
    """The original layout: first lemma -> [[lemma, ..., (term, uri, description, categories)]]."""
    layout: dict[str, list[list[object]]] = {}
    for term, lemmas, description, categories, source in sample_entries():
        lemma_list: list[object] = list(lemmas.split())
        layout.setdefault(lemmas.split()[0], []).append([*lemma_list, (term, source, description, categories)])
    return layout


def write_pickle(tmp_path: Path, obj: object, name: str = "en_vocab_processed.pickle") -> Path:
    path = tmp_path / name
    path.write_bytes(pickle.dumps(obj))
    return path


def test_detoex_pickle_in_the_original_layout_matches_the_csv(tmp_path: Path) -> None:
    from_csv = import_detoex_csv(DETOEX_SAMPLE)
    from_pickle = import_vocabulary(write_pickle(tmp_path, detoex_layout()), "detoex-pickle")
    assert from_pickle.version == from_csv.version


@pytest.mark.parametrize("shape", ["list-of-entries", "list-of-dicts", "dict-of-dicts"])
def test_detoex_pickle_other_plain_shapes(tmp_path: Path, shape: str) -> None:
    entries = sample_entries()
    obj: object
    if shape == "list-of-entries":
        obj = [entry for bucket in detoex_layout().values() for entry in bucket]
    elif shape == "list-of-dicts":
        obj = [{"term": t, "description": d, "categories": c, "source": s} for t, _, d, c, s in entries]
    else:
        obj = {t: {"description": d, "categories": ";".join(c), "source": s} for t, _, d, c, s in entries}
    vocabulary = import_vocabulary(write_pickle(tmp_path, obj), "detoex-pickle")
    assert sorted(t.literal for t in vocabulary.terms()) == sorted(e[0] for e in entries)
    assert {i.id: i.categories for i in vocabulary.issues} == {
        i.id: i.categories for i in import_detoex_csv(DETOEX_SAMPLE).issues
    }


class RunsAShellCommand:
    """A pickle payload that would run a shell command when loaded by plain pickle.load."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, tuple[str]]:
        return (os.system, (f"echo pwned > {self.marker}",))


class CallsEval:
    def __reduce__(self) -> tuple[object, tuple[str]]:
        return (eval, ("__import__('os').getcwd()",))


def test_malicious_pickle_is_refused_and_nothing_runs(tmp_path: Path) -> None:
    marker = tmp_path / "pwned.txt"
    path = write_pickle(tmp_path, [RunsAShellCommand(marker)])
    with pytest.raises(ImportFormatError) as caught:
        import_vocabulary(path, "detoex-pickle")
    assert "refers to posix.system" in caught.value.reason or "refers to nt.system" in caught.value.reason
    assert "only plain lists, tuples, dicts" in caught.value.reason
    assert caught.value.path == str(path)
    assert not marker.exists()


@pytest.mark.parametrize(
    ("payload", "named"),
    [
        pytest.param(CallsEval(), "builtins.eval", id="eval"),
        pytest.param(OrderedDict(a={"description": "d"}), "collections.OrderedDict", id="ordered-dict"),
    ],
)
def test_pickles_naming_any_class_are_refused(tmp_path: Path, payload: object, named: str) -> None:
    path = write_pickle(tmp_path, payload)
    with pytest.raises(ImportFormatError) as caught:
        import_vocabulary(path, "detoex-pickle")
    assert f"refers to {named}" in caught.value.reason


def test_garbage_is_not_a_pickle(tmp_path: Path) -> None:
    path = tmp_path / "en_vocab.pickle"
    path.write_bytes(b"term,lemmas\nnot a pickle\n")
    with pytest.raises(ImportFormatError, match="not a readable pickle"):
        import_detoex_pickle(path)


def test_pickle_of_wrong_shape_names_the_accepted_shapes(tmp_path: Path) -> None:
    with pytest.raises(ImportFormatError, match="accepted shapes"):
        import_vocabulary(write_pickle(tmp_path, 42), "detoex-pickle")


# --- YAML round trip -------------------------------------------------------------------------


@pytest.mark.parametrize(("path", "fmt"), [(DEBIAS_SAMPLE, "debias-csv"), (DETOEX_SAMPLE, "detoex-csv")])
def test_import_write_load_keeps_the_version(tmp_path: Path, path: Path, fmt: str) -> None:
    imported = import_vocabulary(path, fmt)
    loaded = round_trip(imported, tmp_path / "vocabularies")
    assert loaded.version == imported.version
    assert [t.id for t in loaded.terms()] == [t.id for t in imported.terms()]


def test_every_category_is_valid() -> None:
    for path, fmt in ((DEBIAS_SAMPLE, "debias-csv"), (DETOEX_SAMPLE, "detoex-csv")):
        for issue in import_vocabulary(path, fmt).issues:
            assert issue.categories and set(issue.categories) <= set(CATEGORIES)
            assert issue.sources and issue.description


# --- the published vocabularies (../shared/data) ----------------------------------------------


@pytest.mark.shared_data
def test_debias_published_csvs_give_642_terms_with_their_ambiguous_flags(tmp_path: Path) -> None:
    folder = shared("debias-vocabulary")
    expected_ambiguous: set[str] = set()
    expected_uris: set[str] = set()
    imported: dict[str, bool] = {}
    for path in sorted(folder.glob("*.csv")):
        with path.open(encoding="utf-8", newline="") as handle:
            for row in csv.DictReader(handle):
                expected_uris.add(row["uri"])
                if row["disambiguation"] == "1":
                    expected_ambiguous.add(row["uri"])
        vocabulary = import_vocabulary(path, "debias-csv")
        assert vocabulary.languages == (path.name[:2],)
        assert round_trip(vocabulary, tmp_path / path.stem).version == vocabulary.version
        for term in vocabulary.terms():
            assert term.uri is not None and term.uri not in imported
            imported[term.uri] = term.ambiguous
    assert len(expected_uris) == len(imported) == 642
    assert set(imported) == expected_uris
    assert {uri for uri, ambiguous in imported.items() if ambiguous} == expected_ambiguous


@pytest.mark.shared_data
@pytest.mark.parametrize(("language", "entries"), [("en", 3903), ("fr", 1644), ("el", 288)])
def test_detoex_published_csvs(tmp_path: Path, language: str, entries: int) -> None:
    path = shared("detoex-vocabulary") / f"{language}_vocabulary.csv"
    vocabulary = import_vocabulary(path, "detoex-csv")
    assert vocabulary.languages == (language,)
    assert len(vocabulary.issues) == entries
    assert sum(1 for _ in vocabulary.terms()) == entries
    assert len({i.id for i in vocabulary.issues}) == entries
    assert round_trip(vocabulary, tmp_path / "vocabularies").version == vocabulary.version
