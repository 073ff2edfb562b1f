"""Export a vocabulary as SKOS-XL (Turtle), readable back by the debias-skos importer.

Mapping (one skos:ConceptScheme for the vocabulary, one skos:Concept per issue):

| unerase            | RDF                                                                   |
|--------------------|-----------------------------------------------------------------------|
| vocabulary         | skos:ConceptScheme, dct:title name, owl:versionInfo version           |
| issue              | skos:Concept, skos:inScheme / skos:hasTopConcept; IRI = issue.uri     |
| issue id           | dct:identifier                                                        |
| description        | skos:definition @lang                                                 |
| suggestion_note    | skos:scopeNote @lang                                                  |
| sources            | dct:source (an IRI for http(s) URLs, else a literal citation), and    |
|                    | unerase:sources ( ... ) with the same values in order                 |
| categories         | unerase:category <urn:unerase:category:ID>, and unerase:categories    |
|                    | ( ... ) in order                                                      |
| suggested_terms    | unerase:suggestedTerms ( "..."@lang ... )  (an rdf:List keeps order)  |
| term               | skosxl:Label with skosxl:literalForm @lang; IRI = term.uri;           |
|                    | skosxl:prefLabel for the first term, skosxl:altLabel for the others   |
| term order         | unerase:position xsd:integer (RDF has no order of its own)            |
| ambiguous          | unerase:ambiguous xsd:boolean                                         |
| sense_cues         | unerase:neutralCues / unerase:contentiousCues ( ... ) rdf:Lists       |

SKOS has no property for identity categories (skos:subject was dropped from SKOS in 2009), so
they live in a small `unerase:` namespace, `urn:unerase:schema#`: a URN because the project owns
no web domain to mint dereferenceable IRIs under, and the same scheme as the default issue URIs.

Node IRIs: an issue or term without a usable URI of its own (not an absolute IRI, or already used
by another node, such as one DE-BIAS term listed in two issues) gets a minted
`urn:unerase:issue:...` / `urn:unerase:label:...` IRI and keeps its URI in unerase:issueUri /
unerase:termUri, so the importer restores it exactly.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from urllib.parse import quote

from rdflib import BNode, Graph, Literal, Namespace, URIRef
from rdflib.collection import Collection
from rdflib.namespace import DCTERMS, OWL, RDF, SKOS, XSD
from rdflib.term import Node

from engine.vocabulary.model import Issue, Vocabulary

SKOSXL = Namespace("http://www.w3.org/2008/05/skos-xl#")
UNERASE = Namespace("urn:unerase:schema#")
CATEGORY_PREFIX = "urn:unerase:category:"
MINTED_ISSUE_PREFIX = "urn:unerase:issue:"
MINTED_LABEL_PREFIX = "urn:unerase:label:"

_IRI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:[^\s<>\"{}|\\^`]+$")
_WEB_URL = re.compile(r"^https?://[^\s<>\"{}|\\^`]+$")


def export_skos(vocabulary: Vocabulary) -> str:
    """The vocabulary as Turtle text (see the module docstring for the mapping)."""
    return build_graph(vocabulary).serialize(format="turtle")


def build_graph(vocabulary: Vocabulary) -> Graph:
    graph = Graph()
    graph.bind("skos", SKOS)
    graph.bind("skosxl", SKOSXL)
    graph.bind("dct", DCTERMS)
    graph.bind("unerase", UNERASE)
    scheme = URIRef(f"urn:unerase:scheme:{quote(vocabulary.name, safe='')}")
    graph.add((scheme, RDF.type, SKOS.ConceptScheme))
    graph.add((scheme, DCTERMS.title, Literal(vocabulary.name)))
    graph.add((scheme, OWL.versionInfo, Literal(vocabulary.version)))
    used: set[str] = set()
    for issue in vocabulary.issues:
        concept = _add_issue(graph, issue, used)
        graph.add((scheme, SKOS.hasTopConcept, concept))
        graph.add((concept, SKOS.inScheme, scheme))
    return graph


def _node(uri: str | None, minted: str, used: set[str]) -> tuple[URIRef, bool]:
    """The node for a URI, or a minted one when the URI is unusable; True when minted."""
    if uri and _IRI.match(uri) and uri not in used:
        used.add(uri)
        return URIRef(uri), False
    used.add(minted)
    return URIRef(minted), True


def _add_list(graph: Graph, subject: Node, predicate: URIRef, items: Sequence[Node]) -> None:
    head = BNode()
    Collection(graph, head, list(items))
    graph.add((subject, predicate, head))


def _add_issue(graph: Graph, issue: Issue, used: set[str]) -> URIRef:
    lang = issue.language
    concept, minted = _node(issue.uri, f"{MINTED_ISSUE_PREFIX}{lang}:{issue.id}", used)
    if minted:
        graph.add((concept, UNERASE.issueUri, Literal(issue.uri)))
    graph.add((concept, RDF.type, SKOS.Concept))
    graph.add((concept, DCTERMS.identifier, Literal(issue.id)))
    graph.add((concept, SKOS.definition, Literal(issue.description, lang=lang)))
    if issue.suggestion_note:
        graph.add((concept, SKOS.scopeNote, Literal(issue.suggestion_note, lang=lang)))
    sources = [URIRef(s) if _WEB_URL.match(s) else Literal(s) for s in issue.sources]
    categories = [URIRef(CATEGORY_PREFIX + c) for c in issue.categories]
    # Single triples for queries and other SKOS tools, plus rdf:Lists so the order survives.
    for source in sources:
        graph.add((concept, DCTERMS.source, source))
    for category in categories:
        graph.add((concept, UNERASE.category, category))
    _add_list(graph, concept, UNERASE.sources, sources)
    _add_list(graph, concept, UNERASE.categories, categories)
    if issue.suggested_terms:
        _add_list(graph, concept, UNERASE.suggestedTerms, [Literal(t, lang=lang) for t in issue.suggested_terms])
    for position, term in enumerate(issue.terms):
        label, minted = _node(term.uri, f"{MINTED_LABEL_PREFIX}{lang}:{issue.id}:{position}", used)
        if minted and term.uri:
            graph.add((label, UNERASE.termUri, Literal(term.uri)))
        graph.add((concept, SKOSXL.prefLabel if position == 0 else SKOSXL.altLabel, label))
        graph.add((label, RDF.type, SKOSXL.Label))
        graph.add((label, SKOSXL.literalForm, Literal(term.literal, lang=lang)))
        graph.add((label, UNERASE.ambiguous, Literal(term.ambiguous, datatype=XSD.boolean)))
        graph.add((label, UNERASE.position, Literal(position, datatype=XSD.integer)))
        for predicate, cues in (
            (UNERASE.neutralCues, term.sense_cues.neutral),
            (UNERASE.contentiousCues, term.sense_cues.contentious),
        ):
            if cues:
                _add_list(graph, label, predicate, [Literal(c, lang=lang) for c in cues])
    return concept
