"""Import SKOS-XL vocabularies: the DE-BIAS edition on EU Vocabularies, and unerase's own export.

Assumed DE-BIAS structure. It was read from the published file `DE-BIAS_vocabulary.ttl`
(EU Vocabularies release 2025-04-02, as mirrored in the GitHub repository
trnstlntk/de-bias-wiki-mapper, `DE-BIAS_vocabulary_20250425.ttl`), whose model follows the
Words Matter knowledge graph (cultural-ai/wordsmatter). With c4p: = http://data.europa.eu/c4p/ontology#:

- a contentious issue is a `skos:Concept` (`.../data/c_63_de`) with `dct:title`,
  `dct:description` (@lang), `dct:source` (citations), `c4p:hasContentiousTerm` -> terms,
  `c4p:hasBiasCategory` -> category concepts, `c4p:hasSuggestedTerm` -> suggested terms;
  it has no skos:prefLabel (the publisher says so in the scheme description);
- a term is a `c4p:ContentiousTerm` (`.../data/t_94_de`) with `skosxl:literalForm` (@lang),
  `c4p:hasContentiousIssue` (the inverse link), `c4p:isAmbiguous` (xsd:boolean) and
  `c4p:hasSuggestionNote` -> a `c4p:SuggestionNote` whose `rdf:value` holds the note in each
  language; notes belong to terms, so they are merged per issue naming the terms they cover;
- a suggested term is a `c4p:SuggestedTerm` with `skosxl:literalForm`;
- a category is a `skos:Concept` in the scheme `.../data/categories` with `skosxl:prefLabel`
  labels per language (cat_5 is "(Dis)Ability"); categories are mapped by their English label
  through CATEGORY_LABELS, and labels we have no counterpart for become "other".

Generic SKOS-XL is read too: terms are the `skosxl:literalForm` of a concept's
`skosxl:prefLabel`/`skosxl:altLabel` labels (and plain `skos:prefLabel`/`skos:altLabel`
literals); the description is `skos:definition` or `dct:description`, the suggestion note
`skos:scopeNote`; the `unerase:` properties written by engine.skos restore everything else.
A concept with labels in several languages gives one issue per language; `language` keeps one.

Formats: Turtle (.ttl), RDF/XML (.rdf, .xml, .owl), N-Triples (.nt), N3 (.n3), else sniffed from
the first bytes. JSON-LD is not accepted because its @context may be fetched from the network.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from xml.sax import SAXParseException

from rdflib import Graph, Literal, Namespace, URIRef
from rdflib.collection import Collection
from rdflib.namespace import DCTERMS, RDF, SKOS
from rdflib.term import Node

from engine.errors import ImportFormatError
from engine.importers._common import NO_DESCRIPTION, IdAllocator, clean, merge_suggestions, read_text, unique
from engine.skos import CATEGORY_PREFIX, MINTED_LABEL_PREFIX, SKOSXL, UNERASE
from engine.vocabulary.loader import ID_PATTERN, LANGUAGE_PATTERN
from engine.vocabulary.model import CATEGORIES, Issue, SenseCues, Term, Vocabulary

C4P = Namespace("http://data.europa.eu/c4p/ontology#")
FORMATS = {".ttl": "turtle", ".turtle": "turtle", ".rdf": "xml", ".xml": "xml", ".owl": "xml", ".nt": "nt", ".n3": "n3"}

# English labels of DE-BIAS bias categories -> our ids; anything else is "other".
CATEGORY_LABELS: dict[str, str] = {
    "(dis)ability": "disability",
    "disability": "disability",
    "gender": "gender",
    "gender identity": "gender",
    "sexual orientation": "sexual-orientation",
    "sexuality": "sexual-orientation",
    "race": "race",
    "ethnicity": "ethnicity",
    "religion": "religion",
    "age": "age",
    "class": "socioeconomic-status",
    "socioeconomic status": "socioeconomic-status",
    "occupation": "occupation",
    "addiction": "addiction",
    "physical appearance": "physical-appearance",
    "migration": "migration-colonial-past",
    "colonialism": "migration-colonial-past",
    "political affiliation": "political-affiliation",
} | {c.replace("-", " "): c for c in CATEGORIES}


def import_debias_skos(path: Path, language: str | None = None) -> Vocabulary:
    graph = parse_graph(path)
    concepts = _issue_concepts(graph)
    if not concepts:
        raise ImportFormatError(
            "no skos:Concept with terms found; expected concepts with skosxl:prefLabel/altLabel "
            "labels or DE-BIAS c4p:hasContentiousTerm terms",
            path=str(path),
        )
    allocators: dict[str, IdAllocator] = {}
    issues: list[Issue] = []
    for concept in concepts:
        for lang, labels in _labels_by_language(graph, concept, language, path).items():
            if language is None or lang == language:
                issues.append(_issue(graph, concept, lang, labels, allocators.setdefault(lang, IdAllocator())))
    if not issues:
        raise ImportFormatError(
            f"no terms in the language '{language}'; the file has other languages only", path=str(path)
        )
    return Vocabulary(tuple(sorted(issues, key=lambda i: (i.language, i.id))), name=path.stem)


def parse_graph(path: Path) -> Graph:
    fmt = FORMATS.get(path.suffix.lower())
    if fmt == "xml":
        if not path.is_file():
            raise ImportFormatError("no such file; give the path of an existing file", path=str(path))
        data: str | bytes = path.read_bytes()  # XML declares its own encoding
    else:
        data = read_text(path)
        fmt = fmt or _sniff(data, path)
    try:
        return Graph().parse(data=data, format=fmt)
    except SAXParseException as exc:
        raise _syntax_error(path, fmt, exc.getMessage(), exc.getLineNumber()) from None
    except SyntaxError as exc:  # rdflib's BadSyntax; `lines` counts from 0
        lines = getattr(exc, "lines", None)
        why = getattr(exc, "_why", None) or str(exc).splitlines()[0]
        raise _syntax_error(path, fmt, why, lines + 1 if isinstance(lines, int) else None) from None
    except Exception as exc:  # rdflib raises many types for bad input; all mean "not parseable"
        match = re.search(r"line (\d+)", str(exc))
        raise _syntax_error(
            path,
            fmt,
            str(exc).splitlines()[0] if str(exc) else type(exc).__name__,
            int(match.group(1)) if match else None,
        ) from None


def _syntax_error(path: Path, fmt: str, why: str, line: int | None) -> ImportFormatError:
    return ImportFormatError(
        f"not valid {fmt} RDF: {why}; accepted: Turtle (.ttl), RDF/XML (.rdf/.xml), N-Triples (.nt), N3 (.n3)",
        path=str(path),
        line=line,
    )


def _sniff(text: str, path: Path) -> str:
    head = text.lstrip()[:2000]
    if head.startswith("<?xml") or "<rdf:RDF" in head:
        return "xml"
    if re.search(r"^\s*(@prefix|@base|PREFIX|BASE)\b", head, re.MULTILINE | re.IGNORECASE):
        return "turtle"
    if head.startswith("<") or head.startswith("_:"):
        return "nt" if re.match(r"^(<[^>]*>|_:\S+)\s+<[^>]*>\s+\S.*\.\s*$", head.splitlines()[0]) else "turtle"
    raise ImportFormatError(
        "cannot tell the RDF format from the name or the content; accepted: Turtle (.ttl), "
        "RDF/XML (.rdf/.xml), N-Triples (.nt), N3 (.n3)",
        path=str(path),
        line=1,
    )


def _issue_concepts(graph: Graph) -> list[Node]:
    categories = set(graph.objects(None, C4P.hasBiasCategory))
    found: set[Node] = set(graph.subjects(C4P.hasContentiousTerm, None))
    found.update(graph.objects(None, C4P.hasContentiousIssue))
    label_properties = (SKOSXL.prefLabel, SKOSXL.altLabel, SKOS.prefLabel, SKOS.altLabel)
    for concept in graph.subjects(RDF.type, SKOS.Concept):
        # DE-BIAS category concepts have labels too, but they are not contentious issues.
        if concept not in categories and any(graph.value(concept, p) is not None for p in label_properties):
            found.add(concept)
    return sorted(found, key=str)


@dataclass(frozen=True, slots=True)
class _Label:
    """One term as found in the graph; `node` is None for a plain skos:prefLabel literal."""

    node: Node | None
    form: Literal
    preferred: bool

    @property
    def literal(self) -> str:
        return clean(str(self.form))


def _labels_by_language(graph: Graph, concept: Node, fallback: str | None, path: Path) -> dict[str, list[_Label]]:
    found: list[_Label] = []
    linked = ((SKOSXL.prefLabel, True), (SKOSXL.altLabel, False), (C4P.hasContentiousTerm, False))
    for predicate, preferred in linked:
        for node in graph.objects(concept, predicate):
            found.extend(_Label(node, form, preferred) for form in _literals(graph.objects(node, SKOSXL.literalForm)))
    for node in graph.subjects(C4P.hasContentiousIssue, concept):
        found.extend(_Label(node, form, False) for form in _literals(graph.objects(node, SKOSXL.literalForm)))
    for predicate, preferred in ((SKOS.prefLabel, True), (SKOS.altLabel, False)):
        found.extend(_Label(None, form, preferred) for form in _literals(graph.objects(concept, predicate)))
    by_language: dict[str, list[_Label]] = {}
    for label in found:
        lang = label.form.language or fallback
        if lang is None or not LANGUAGE_PATTERN.match(lang):
            raise ImportFormatError(
                f"the label '{label.literal}' of {concept} has no language tag; "
                'tag it ("..."@en) or give the language explicitly',
                path=str(path),
            )
        by_language.setdefault(lang, []).append(label)
    return by_language


def _literals(nodes: Iterable[Node]) -> list[Literal]:
    return [n for n in nodes if isinstance(n, Literal) and clean(str(n))]


def _in_language(graph: Graph, subject: Node, predicates: Iterable[URIRef], lang: str) -> list[str]:
    """Texts tagged with `lang`, else the untagged ones; sorted, as RDF keeps no order."""
    values = [v for p in predicates for v in _literals(graph.objects(subject, p))]
    tagged = [clean(str(v)) for v in values if v.language == lang]
    return sorted(unique(tagged or [clean(str(v)) for v in values if v.language is None]))


def _list(graph: Graph, subject: Node, predicate: URIRef) -> tuple[str, ...]:
    head = graph.value(subject, predicate)
    return unique(clean(str(item)) for item in Collection(graph, head)) if head is not None else ()


def _categories(graph: Graph, concept: Node) -> tuple[str, ...]:
    ordered = _list(graph, concept, UNERASE.categories)
    if ordered:  # written by engine.skos, in the curators' order
        ids = (c.removeprefix(CATEGORY_PREFIX) for c in ordered)
        return unique(c if c in CATEGORIES else "other" for c in ids)
    found = [str(c).removeprefix(CATEGORY_PREFIX) for c in graph.objects(concept, UNERASE.category)]
    for category in graph.objects(concept, C4P.hasBiasCategory):
        names = [clean(str(lit)).casefold() for lit in _category_labels(graph, category)]
        found.append(next((CATEGORY_LABELS[n] for n in names if n in CATEGORY_LABELS), "other"))
    valid = {c if c in CATEGORIES else "other" for c in found}
    return tuple(sorted(valid, key=CATEGORIES.index)) or ("other",)


def _category_labels(graph: Graph, category: Node) -> list[Literal]:
    labels = _literals(graph.objects(category, SKOS.prefLabel))
    for label in graph.objects(category, SKOSXL.prefLabel):
        labels.extend(_literals(graph.objects(label, SKOSXL.literalForm)))
    return sorted(labels, key=lambda lit: (lit.language != "en", str(lit)))


def _ordered(graph: Graph, labels: list[_Label]) -> list[_Label]:
    """Our export's positions first, then preferred labels, then alphabetical; no repeats."""

    def key(label: _Label) -> tuple[int, bool, str]:
        position = graph.value(label.node, UNERASE.position) if label.node is not None else None
        rank = int(position) if isinstance(position, Literal) else 1 << 30
        return (rank, not label.preferred, label.literal.casefold())

    unique_labels: dict[str, _Label] = {}
    for label in sorted(labels, key=key):
        unique_labels.setdefault(label.literal.casefold(), label)
    return list(unique_labels.values())


def _issue(graph: Graph, concept: Node, lang: str, labels: list[_Label], ids: IdAllocator) -> Issue:
    ordered = _ordered(graph, labels)
    identifier = clean(str(graph.value(concept, DCTERMS.identifier) or ""))
    if ID_PATTERN.match(identifier):
        issue_id = ids.claim(identifier)
    else:
        issue_id = ids.allocate(f"debias-{lang}", ordered[0].literal)
    kept_uri = graph.value(concept, UNERASE.issueUri)
    if kept_uri is not None:
        uri = str(kept_uri)
    else:
        uri = str(concept) if isinstance(concept, URIRef) else f"urn:unerase:{lang}:{issue_id}"
    terms = tuple(_term(graph, label, lang, issue_id) for label in ordered)
    per_term = [(label.literal, _term_notes(graph, label.node, lang)) for label in ordered]
    concept_notes = _in_language(graph, concept, [SKOS.scopeNote], lang)
    suggested = [
        text
        for node in graph.objects(concept, C4P.hasSuggestedTerm)
        for text in _in_language(graph, node, [SKOSXL.literalForm], lang)
    ]
    description = _in_language(graph, concept, [SKOS.definition, DCTERMS.description], lang)
    sources = _list(graph, concept, UNERASE.sources) or sorted(
        {clean(str(s)) for s in graph.objects(concept, DCTERMS.source)} - {""}
    )
    return Issue(
        id=issue_id,
        language=lang,
        uri=uri,
        categories=_categories(graph, concept),
        description=" ".join(description) or NO_DESCRIPTION,
        terms=terms,
        suggestion_note=" ".join(unique([*concept_notes, merge_suggestions(per_term)])),
        suggested_terms=unique([*_list(graph, concept, UNERASE.suggestedTerms), *sorted(suggested)]),
        sources=tuple(sources) or (uri,),
    )


def _term_notes(graph: Graph, node: Node | None, lang: str) -> list[str]:
    """The DE-BIAS suggestion notes of one term, in the issue's language."""
    if node is None:
        return []
    notes = graph.objects(node, C4P.hasSuggestionNote)
    return [text for note in notes for text in _in_language(graph, note, [RDF.value], lang)]


def _term(graph: Graph, label: _Label, lang: str, issue_id: str) -> Term:
    node = label.node
    ambiguous = False
    uri: str | None = None
    cues = SenseCues()
    if node is not None:
        flag = graph.value(node, UNERASE.ambiguous)
        if flag is None:
            flag = graph.value(node, C4P.isAmbiguous)
        ambiguous = isinstance(flag, Literal) and flag.toPython() is True
        kept_uri = graph.value(node, UNERASE.termUri)
        if kept_uri is not None:
            uri = str(kept_uri)
        elif isinstance(node, URIRef) and not str(node).startswith(MINTED_LABEL_PREFIX):
            uri = str(node)
        cues = SenseCues(_list(graph, node, UNERASE.neutralCues), _list(graph, node, UNERASE.contentiousCues))
    return Term(
        id=f"{issue_id}#{label.literal}",
        literal=label.literal,
        language=lang,
        issue_id=issue_id,
        ambiguous=ambiguous,
        sense_cues=cues,
        uri=uri,
    )
