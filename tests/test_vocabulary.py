from __future__ import annotations

from pathlib import Path

import pytest

from engine.errors import VocabularyError
from engine.matching.index import build_index
from engine.paths import shipped_vocabularies
from engine.text.lemmatizer import SimplemmaLemmatizer
from engine.vocabulary.loader import load_vocabulary
from engine.vocabulary.model import Vocabulary
from engine.vocabulary.writer import write_vocabulary

from .support.paths import FIXTURES

GOOD = """\
format: unerase-vocabulary/1
language: en
issues:
  - id: en-example
    categories: [disability]
    description: A description.
    sources: [https://example.org]
    terms: [cripple]
"""


def write(tmp_path: Path, text: str, name: str = "vocab.yaml") -> Path:
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("replace", "by", "line", "reason"),
    [
        ("categories: [disability]", "categories: [disabled]", 5, "unknown category 'disabled'; accepted: gender"),
        ("categories: [disability]", "categories: []", 5, "needs at least one category"),
        ("    sources: [https://example.org]\n", "", 4, "the issue has no 'sources'"),
        ("terms: [cripple]", "terms: []", 8, "needs at least one term"),
        ("terms: [cripple]", "terms: [cripple, Cripple]", 8, "lists the term 'Cripple' twice"),
        ("id: en-example", "id: En Example", 4, "id 'En Example' may only use a-z, 0-9 and '-'"),
        ("description: A description.", "description: ''", 6, "'description' must not be empty"),
        ("description: A description.", "descripton: A description.", 4, "unknown key(s) ['descripton']"),
        ("format: unerase-vocabulary/1", "format: other/2", 1, "format 'other/2' is not supported"),
        ("language: en", "language: English", 2, "language 'English' is not a BCP-47 code"),
        ("terms: [cripple]", "terms: [{literl: cripple}]", 8, "unknown key(s) ['literl']"),
        ("terms: [cripple]", "terms: [{literal: cripple, ambiguous: maybe}]", 8, "must be true or false"),
        ("terms: [cripple]", "terms: [{literal: cripple, exact: 1}]", 8, "must be true or false"),
        ("    terms: [cripple]", "    terms: [cripple\n  oops", 10, "not valid YAML"),
    ],
)
def test_bad_files_name_file_line_and_reason(tmp_path: Path, replace: str, by: str, line: int, reason: str) -> None:
    path = write(tmp_path, GOOD.replace(replace, by))
    with pytest.raises(VocabularyError) as error:
        load_vocabulary(path)
    assert str(error.value).startswith(f"{path}:{line}: ")
    assert reason in str(error.value)


def test_empty_and_non_utf8_files(tmp_path: Path) -> None:
    with pytest.raises(VocabularyError, match="the file is empty"):
        load_vocabulary(write(tmp_path, ""))
    bad = tmp_path / "latin1.yaml"
    bad.write_bytes(GOOD.replace("A description.", "Caf\xe9").encode("latin-1"))
    with pytest.raises(VocabularyError, match="not UTF-8"):
        load_vocabulary(bad)
    with pytest.raises(VocabularyError, match="no such file or folder"):
        load_vocabulary(tmp_path / "missing")


def test_duplicate_ids_across_files_and_folder_language(tmp_path: Path) -> None:
    write(tmp_path, GOOD, "en/a.yaml")
    write(tmp_path, GOOD, "en/b.yaml")
    with pytest.raises(VocabularyError, match="issue id 'en-example' is already used in"):
        load_vocabulary(tmp_path)
    other = tmp_path / "other"
    write(other, GOOD, "fr/a.yaml")
    with pytest.raises(VocabularyError, match="does not match the folder 'fr'"):
        load_vocabulary(other)


def test_version_is_a_content_hash_not_a_formatting_hash(tmp_path: Path) -> None:
    one = load_vocabulary(write(tmp_path, GOOD, "one.yaml"))
    reformatted = GOOD.replace("terms: [cripple]", "terms:\n      - cripple\n") + "# a comment\n"
    two = load_vocabulary(write(tmp_path, reformatted, "two.yaml"))
    changed = load_vocabulary(write(tmp_path, GOOD.replace("A description.", "Another."), "three.yaml"))
    assert one.version == two.version
    assert one.version != changed.version
    assert len(one.version) == 16


def test_writer_round_trip_keeps_the_version(tmp_path: Path, fixture_vocabulary: Vocabulary) -> None:
    written = write_vocabulary(fixture_vocabulary, tmp_path / "out")
    assert sorted(p.parent.name for p in written) == ["de", "el", "en", "it", "nl"]
    again = load_vocabulary(tmp_path / "out")
    assert again.version == fixture_vocabulary.version
    assert {i.id: i for i in again.issues} == {i.id: i for i in fixture_vocabulary.issues}


def test_the_shipped_vocabularies_round_trip_with_their_exact_terms(tmp_path: Path) -> None:
    shipped = load_vocabulary(shipped_vocabularies() / "pt")
    assert any(t.exact for i in shipped.issues for t in i.terms)
    write_vocabulary(shipped, tmp_path / "out")
    again = load_vocabulary(tmp_path / "out")
    assert again.version == shipped.version


def test_lemma_keys_are_cached_on_disk_by_version(tmp_path: Path, fixture_vocabulary: Vocabulary) -> None:
    lemmatizer = SimplemmaLemmatizer()
    cold = build_index(fixture_vocabulary, "en", lemmatizer, tmp_path)
    files = list(tmp_path.glob("keys-*-en-*.json"))
    assert len(files) == 1 and fixture_vocabulary.version in files[0].name
    warm = build_index(fixture_vocabulary, "en", lemmatizer, tmp_path)
    assert (cold.cache_hit, warm.cache_hit) == (False, True)
    assert warm.keys == cold.keys
    files[0].write_text("{not json", encoding="utf-8")  # a damaged cache is rebuilt, not trusted
    assert build_index(fixture_vocabulary, "en", lemmatizer, tmp_path).cache_hit is False


def test_fixture_vocabulary_loads() -> None:
    vocabulary = load_vocabulary(FIXTURES / "vocab")
    assert vocabulary.languages == ("de", "el", "en", "it", "nl")
    cripple = vocabulary.issue("en-cripple")
    assert [t.ambiguous for t in cripple.terms] == [True, False, True]
    assert cripple.terms[0].sense_cues.neutral == ("economy", "port", "network", "strike")
    assert cripple.uri == "urn:unerase:en:en-cripple"
