"""SKOS-XL: the exporter's graph, the DE-BIAS SKOS importer, and export -> import round trips."""

from __future__ import annotations

from pathlib import Path

import pytest
from rdflib import Graph, Literal, URIRef
from rdflib.namespace import DCTERMS, RDF, SKOS, XSD

from engine.errors import ImportFormatError
from engine.importers import import_vocabulary
from engine.skos import SKOSXL, UNERASE, export_skos
from engine.vocabulary.model import Issue, SenseCues, Term, Vocabulary

FIXTURES = Path(__file__).parent / "fixtures"
SKOS_TTL = FIXTURES / "debias-skos-sample.ttl"
SKOS_RDF = FIXTURES / "debias-skos-sample.rdf"
SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def term(issue_id: str, literal: str, **kwargs: object) -> Term:
    return Term(id=f"{issue_id}#{literal}", literal=literal, language="en", issue_id=issue_id, **kwargs)  # type: ignore[arg-type]


def handmade() -> Vocabulary:
    """Every field the exporter maps, including a term URI shared by two issues."""
    shared_uri = "http://example.org/terms/t_9"
    return Vocabulary(
        (
            Issue(
                id="en-lame",
                language="en",
                uri="urn:unerase:en:en-lame",
                categories=("disability", "other"),
                description="Invented: a word for a walking impairment, also slang for dull.",
                terms=(
                    term("en-lame", "lame", ambiguous=True, sense_cues=SenseCues(("horse", "excuse"), ("you",))),
                    term("en-lame", "lamer"),
                    term("en-lame", "lame-o", uri=shared_uri),
                ),
                suggestion_note="Invented: say what you mean instead.",
                suggested_terms=("dull", "weak"),
                sources=("https://example.org/guide#lame", "Sample Guide, 2020, p. 3"),
            ),
            Issue(
                id="en-lame-o",
                language="en",
                uri="http://example.org/issues/c_9",
                categories=("other",),
                description="Invented: a second issue that lists the same source term.",
                terms=(term("en-lame-o", "lame-o", uri=shared_uri),),
                sources=("https://example.org/other",),
            ),
        ),
        name="handmade",
    )


def parse(turtle: str) -> Graph:
    return Graph().parse(data=turtle, format="turtle")


def test_export_maps_issues_to_concepts_and_terms_to_skosxl_labels() -> None:
    graph = parse(export_skos(handmade()))
    concept = URIRef("urn:unerase:en:en-lame")
    assert (None, RDF.type, SKOS.ConceptScheme) in graph
    assert (concept, RDF.type, SKOS.Concept) in graph
    assert graph.value(concept, DCTERMS.identifier) == Literal("en-lame")
    assert graph.value(concept, SKOS.definition).language == "en"  # type: ignore[union-attr]
    assert graph.value(concept, SKOS.scopeNote) == Literal("Invented: say what you mean instead.", lang="en")
    assert set(graph.objects(concept, DCTERMS.source)) == {
        URIRef("https://example.org/guide#lame"),
        Literal("Sample Guide, 2020, p. 3"),
    }
    assert set(graph.objects(concept, UNERASE.category)) == {
        URIRef("urn:unerase:category:disability"),
        URIRef("urn:unerase:category:other"),
    }
    preferred = graph.value(concept, SKOSXL.prefLabel)
    assert graph.value(preferred, SKOSXL.literalForm) == Literal("lame", lang="en")
    assert graph.value(preferred, UNERASE.ambiguous) == Literal(True, datatype=XSD.boolean)
    alternatives = {graph.value(label, SKOSXL.literalForm) for label in graph.objects(concept, SKOSXL.altLabel)}
    assert alternatives == {Literal("lamer", lang="en"), Literal("lame-o", lang="en")}


def test_shared_term_uri_gets_a_minted_label_that_keeps_it() -> None:
    graph = parse(export_skos(handmade()))
    kept = list(graph.subjects(UNERASE.termUri, Literal("http://example.org/terms/t_9")))
    assert len(kept) == 1 and str(kept[0]).startswith("urn:unerase:label:")


def test_export_then_import_gives_the_same_vocabulary(tmp_path: Path) -> None:
    original = handmade()
    path = tmp_path / "handmade.ttl"
    path.write_text(export_skos(original), encoding="utf-8")
    back = import_vocabulary(path, "debias-skos")
    assert back.version == original.version
    assert sorted(back.terms(), key=lambda t: t.id) == sorted(original.terms(), key=lambda t: t.id)


@pytest.mark.parametrize("fixture", [SKOS_TTL, SKOS_RDF], ids=["turtle", "rdf-xml"])
def test_debias_skos_structure_is_imported(fixture: Path) -> None:
    vocabulary = import_vocabulary(fixture, "debias-skos")
    assert vocabulary.languages == ("de", "en")
    lame = vocabulary.issue("debias-en-lame")
    assert lame.uri == "http://example.org/debias-sample/c_1_en"
    assert [(t.literal, t.ambiguous, t.uri) for t in lame.terms] == [
        ("Lame", True, "http://example.org/debias-sample/t_1_en"),
        ("Lamebrain", False, "http://example.org/debias-sample/t_2_en"),
    ]
    assert lame.categories == ("disability",)
    assert lame.suggested_terms == ("person with a walking impairment",)
    assert lame.suggestion_note == (
        "Invented sample advice: name the impairment only when it matters. "
        "For “Lame”: Invented sample advice: the neutral sense about animals is fine."
    )
    assert lame.sources == (
        "Sample Glossary, n.d., https://example.org/glossary",
        "Sample Style Guide, 2021, https://example.org/style#lame",
    )
    # the category concepts are not issues; an unknown category label becomes "other"
    assert vocabulary.issue("debias-en-spinster").categories == ("gender", "other")
    assert vocabulary.issue("debias-en-spinster").sources == ("http://example.org/debias-sample/c_2_en",)
    german = vocabulary.issue("debias-de-lahm")
    assert german.suggestion_note.startswith("Erfundener Beispielrat")
    assert [t.language for t in german.terms] == ["de"]


def test_turtle_and_rdf_xml_fixtures_agree() -> None:
    assert import_vocabulary(SKOS_TTL, "debias-skos").version == import_vocabulary(SKOS_RDF, "debias-skos").version


def test_language_keeps_one_language() -> None:
    vocabulary = import_vocabulary(SKOS_TTL, "debias-skos", language="de")
    assert [i.id for i in vocabulary.issues] == ["debias-de-lahm"]
    with pytest.raises(ImportFormatError, match="no terms in the language 'it'"):
        import_vocabulary(SKOS_TTL, "debias-skos", language="it")


def test_format_is_sniffed_without_a_known_extension(tmp_path: Path) -> None:
    path = tmp_path / "vocabulary.data"
    path.write_bytes(SKOS_RDF.read_bytes())
    assert import_vocabulary(path, "debias-skos").version == import_vocabulary(SKOS_TTL, "debias-skos").version
    path.write_bytes(SKOS_TTL.read_bytes())
    assert import_vocabulary(path, "debias-skos").languages == ("de", "en")


@pytest.mark.parametrize(
    ("name", "content", "line", "reason"),
    [
        ("bad.ttl", '@prefix ex: <http://x/> .\nex:a ex:b "c" ;\n ex:d .\n', 3, "not valid turtle RDF"),
        (
            "bad.rdf",
            "<?xml version='1.0'?>\n<rdf:RDF xmlns:rdf='http://www.w3.org/1999/02/22-rdf-syntax-ns#'>\n<x",
            3,
            "not valid xml RDF",
        ),
        ("empty.ttl", "@prefix ex: <http://x/> .\n", None, "no skos:Concept with terms found"),
        ("plain.txt", "just some words\n", 1, "cannot tell the RDF format"),
        (
            "untagged.ttl",
            "@prefix skos: <http://www.w3.org/2004/02/skos/core#> .\n"
            '<http://x/c> a skos:Concept ; skos:prefLabel "w" .\n',
            None,
            "has no language tag",
        ),
    ],
)
def test_bad_rdf_files(tmp_path: Path, name: str, content: str, line: int | None, reason: str) -> None:
    path = tmp_path / name
    path.write_text(content, encoding="utf-8")
    with pytest.raises(ImportFormatError) as caught:
        import_vocabulary(path, "debias-skos")
    assert caught.value.path == str(path)
    assert caught.value.line == line
    assert reason in caught.value.reason


def test_non_utf8_turtle_is_reported(tmp_path: Path) -> None:
    path = tmp_path / "latin.ttl"
    path.write_bytes('@prefix ex: <http://x/> .\nex:a ex:b "caf\xe9" .\n'.encode("latin-1"))
    with pytest.raises(ImportFormatError, match=r"latin\.ttl:2: the file is not UTF-8"):
        import_vocabulary(path, "debias-skos")


def test_untagged_labels_take_the_given_language(tmp_path: Path) -> None:
    path = tmp_path / "untagged.ttl"
    path.write_text(
        "@prefix skos: <http://www.w3.org/2004/02/skos/core#> .\n"
        '<http://x/c> a skos:Concept ; skos:prefLabel "word" ; skos:definition "Invented." .\n',
        encoding="utf-8",
    )
    vocabulary = import_vocabulary(path, "debias-skos", language="en")
    assert [(t.literal, t.uri) for t in vocabulary.terms()] == [("word", None)]
    assert vocabulary.issues[0].description == "Invented."


@pytest.mark.shared_data
def test_published_debias_terms_survive_export_and_import(tmp_path: Path) -> None:
    folder = SHARED / "debias-vocabulary"
    if not folder.is_dir():
        pytest.skip(f"../shared/data not found: {folder} (the published vocabularies are not part of the project)")
    original = Vocabulary.merge([import_vocabulary(p, "debias-csv") for p in sorted(folder.glob("*.csv"))])
    path = tmp_path / "debias.ttl"
    path.write_text(export_skos(original), encoding="utf-8")
    back = import_vocabulary(path, "debias-skos")
    assert len(list(back.terms())) == 642
    assert back.version == original.version
