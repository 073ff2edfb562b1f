"""Dropping hits that are part of a person's or a place's name (Italian surname Sordo,
Via Moro, Mr. Savage).

The offline heuristic (HeuristicNameFilter) looks at the hit's neighbours and capitalization;
Stanza's NER replaces it when its models are present.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from engine.text.compounds import COMPOUND_LANGUAGES
from engine.text.given_names import is_given_name
from engine.text.lemmatizer import Lemmatizer, load_stanza_pipeline
from engine.text.normalize import strip_marks
from engine.text.tokenizer import Token
from engine.vocabulary.model import Term

# Words that introduce a person's or a place's name, lowercased, without the trailing dot.
NAME_MARKERS: frozenset[str] = frozenset(
    """
    mr mrs ms miss dr prof professor professeur professore professoressa maestro maestra onorevole
    dokter doctor doktor pater padre don sir lady lord saint st street road avenue lane square m mme mlle monsieur
    madame docteur rue boulevard place sainte sig sigg signor signore signora signorina dott dottor
    dottore dottoressa avv ing via piazza corso viale largo san santa santo herr frau fräulein
    straße strasse platz gasse weg allee dhr mevr mevrouw meneer heer straat plein laan gracht sr
    sra srta senhor senhora dom dona doutor doutora rua avenida praça são κ κα κος κυρ κύριος κυρία
    κύριε οδός οδό πλατεία άγιος αγίου αγία
    coach senator mayor minister judge captain colonel sergeant bishop reverend rev uncle aunt
    maire ministre juge capitaine abbé père sœur frère oncle tante maître mademoiselle
    bürgermeister bürgermeisterin richter richterin pfarrer pfarrerin onkel trainer trainerin familie
    herrn bischof
    wethouder burgemeester dominee pastoor oom
    sindaco sindaca ministro ministra giudice capitano zio zia allenatore allenatrice
    prefeito prefeita juiz juíza capitão tio tia treinador treinadora ministra
    δήμαρχος υπουργός παπάς θείος θεία
    """.split()
)

# Words that follow a name to make a place's name (Gypsy Lane, Mohr Street).
PLACE_WORDS: frozenset[str] = frozenset(
    """
    lane street road avenue square hill close drive row court alley
    straße strasse platz gasse weg allee ring damm ufer
    straat plein laan steeg gracht kade dijk
    """.split()
)

# Words that follow a word to make a team's or a club's name, not a person's (Polentoni United, Ricchioni FC): a
# capital beside them is no evidence of a name (see `team_word`).
TEAM_WORDS: frozenset[str] = frozenset(
    """
    united fc afc cf sc sv vv ac as club athletic rovers wanderers rangers crew squad team army
    """.split()
)

# Place words that are everyday words too (German and Dutch "weg": away): in capitals ("TUNTEN WEG VON UNSEREN
# KINDERN") they say nothing about a place.
EVERYDAY_PLACE_WORDS: frozenset[str] = frozenset({"weg"})

# Prepositions, articles and conjunctions of four letters or more that title case leaves in
# lower case ("Famiglia di Ottentotti Davanti alla Capanna").
TITLE_SMALL_WORDS: frozenset[str] = frozenset(
    """
    with from into onto over upon near that this than under after
    dans avec pour sous chez vers entre sans selon
    alla alle allo agli dalla dalle dallo dagli della delle dello degli nella nelle nello negli
    sulla sulle sullo sugli sopra sotto senza come
    voor naar door over onder tegen zonder
    para pelo pela pelos pelas como sobre numa numas nuns entre
    über unter ohne gegen durch beim
    """.split()
)

# The longest vocabulary word a German unknown neighbour makes a surname (Buschmann: 9 letters); a longer one is a
# compound noun beside a place or a firm (Irrenanstalt Eglfing, Kolonialwarenhandlung Gebr. Brandes).
SURNAME_LETTERS = 10
# German articles and their contractions with prepositions: a noun follows them, a surname hardly ever does
ARTICLES: dict[str, frozenset[str]] = {
    "de": frozenset(
        "der die das dem den des ein eine einem einen einer eines im am vom zum zur beim ins ans aufs".split()
    ),
}

# Languages that capitalize every noun: there a capital says nothing about names.
NOUN_CAPITALIZING = frozenset({"de"})

# What ends a stretch of text whose casing is judged as one (a sentence, a heading line).
_SEGMENT_BREAKS = ".!?;:\n"
_SEGMENT_REACH = 40  # tokens looked at on each side; a heading or a sentence is rarely longer

# Small words inside names between a first name, title or place word and the rest
# (Ria de Mof, Van der Kreupel, rue de la Juiverie, Nossa Senhora dos Pretos).
NAME_PARTICLES: frozenset[str] = frozenset(
    """
    de der den van von vom zu zum zur ter ten te het la le les du des d l di da dal del della dei degli
    delle lo do dos das y e
    """.split()
)

# Place words that end Dutch compound street and place names (Moorplein, Heidelaan).
PLACE_SUFFIXES = ("plein", "straat", "laan", "weg", "gracht", "kade", "dijk", "markt", "steeg", "singel", "park")

# Words that often open a sentence before an insult ("You cripple"); a capitalized first word
# from this list is not taken for a first name.
SENTENCE_OPENERS: frozenset[str] = frozenset(
    """
    you your yours the a an this that these those my his her our their hey oh ah what he she they we
    i it dear stupid dirty filthy fucking bloody damn go get shut poor typical another some all no
    not just only every look fuck screw tu toi vous le la les un une ce cette ces mon ton son sa nos
    vos leur sale espèce eh hé voi il lo gli una uno questo questa quel quella sporco sporca brutto
    brutta ehi du ihr der die das den ein eine dieser diese dieses mein dein sein unser euer scheiß
    jij je jullie de het een dat deze mijn jouw zijn haar onze vuile vieze kut você vocês o os as um
    uma esse essa este esta meu minha seu sua seus suas εσύ εσείς ο η το οι τα ένας μια ένα αυτός
    αυτή αυτό ρε βρε μωρέ
    """.split()
)


@dataclass(frozen=True, slots=True)
class Span:
    """A hit as the name filter sees it: token indices first..last of a term."""

    first: int
    last: int
    term: Term


class NameFilter(Protocol):
    def names(self, text: str, tokens: Sequence[Token], spans: Sequence[Span], language: str) -> set[int]:
        """Positions in `spans` of the hits that are part of a person's or a place's name."""
        ...


def _capitalized(token: Token) -> bool:
    return token.text[:1].isupper()


def team_word(token: Token) -> bool:
    """One of TEAM_WORDS written as part of a name ("United", "FC"), not the everyday word ("team up", "as")."""
    return _capitalized(token) and token.text.lower() in TEAM_WORDS


def _shouted(token: Token) -> bool:
    return token.text.isupper() and len(token.text) > 1


def sentence_initial(text: str, tokens: Sequence[Token], index: int) -> bool:
    if index == 0:
        return True
    between = text[tokens[index - 1].end : tokens[index].start]
    return any(c in between for c in '.!?:;\n"«»“”')


def _adjacent(text: str, a: Token, b: Token) -> bool:
    """Tokens separated only by spaces, or by the dot of a title or an initial (Mr. Savage, J. Savage): parts of one
    name. Any other word's dot ends its sentence ("Answer: X. Jan got it first")."""
    between = text[a.end : b.start]
    if "\n" in between or between.strip(" .\u00a0"):
        return False
    return "." not in between or a.text.lower() in NAME_MARKERS or (len(a.text) == 1 and a.text.isupper())


def _initial(text: str, token: Token) -> bool:
    """A first name's initial (the K. of Andreas K. Mohr, the J. of J. Savage)."""
    return len(token.text) == 1 and token.text.isupper() and text[token.end : token.end + 1] == "."


def _judged(text: str, tokens: Sequence[Token], first: int, last: int) -> list[str]:
    """The words whose casing tells the style of the sentence or heading around tokens first..last: those of four
    letters or more outside the hit, after the first word of the stretch (capitalized in any style); short words
    are the articles and prepositions that title case leaves in lower case (and longer ones listed in
    TITLE_SMALL_WORDS)."""
    start = first
    while start > 0 and first - start < _SEGMENT_REACH:
        if any(c in text[tokens[start - 1].end : tokens[start].start] for c in _SEGMENT_BREAKS):
            break
        start -= 1
    end = last
    while end + 1 < len(tokens) and end - last < _SEGMENT_REACH:
        if any(c in text[tokens[end].end : tokens[end + 1].start] for c in _SEGMENT_BREAKS):
            break
        end += 1
    return [
        tokens[i].text
        for i in range(start + 1, end + 1)
        if not first <= i <= last
        and len(tokens[i].text) >= 4
        and tokens[i].text[:1].isalpha()
        and tokens[i].text.lower() not in TITLE_SMALL_WORDS
    ]


def styled(text: str, tokens: Sequence[Token], first: int, last: int, language: str) -> bool:
    """Whether the sentence or heading around tokens first..last is in title case or all caps,
    so that a capital letter says nothing about names ("Portrait of Two Gypsy Women").

    Two thirds of the judged words (`_judged`) capitalized is title case; in German, where nouns
    are capitalized anyway, only all caps counts.
    """
    return _heading_style(_judged(text, tokens, first, last), language)


def plain_case(text: str, tokens: Sequence[Token], first: int, last: int, language: str) -> bool:
    """Whether the sentence around tokens first..last shows ordinary casing: some judged word in lower case, and
    not a heading's style. A heading too short to judge ("The Junkie") is not plain."""
    judged = _judged(text, tokens, first, last)
    return any(word[:1].islower() for word in judged) and not _heading_style(judged, language)


def _heading_style(judged: list[str], language: str) -> bool:
    if not judged:
        return False
    if language in NOUN_CAPITALIZING:  # nouns are capitalized anyway: only all caps is a style
        return sum(word.isupper() for word in judged) * 3 >= len(judged) * 2
    return sum(word[:1].isupper() for word in judged) * 3 >= len(judged) * 2


def _capitalized_run(text: str, tokens: Sequence[Token], first: int, last: int) -> int:
    """How many capitalized words stand side by side with the hit, the hit included."""
    start, end = first, last
    while start > 0 and _capitalized(tokens[start - 1]) and _adjacent(text, tokens[start - 1], tokens[start]):
        start -= 1
    while end + 1 < len(tokens) and _capitalized(tokens[end + 1]) and _adjacent(text, tokens[end], tokens[end + 1]):
        end += 1
    return end - start + 1


def _full_name_after(text: str, tokens: Sequence[Token], given: int) -> bool:
    """Whether the given name at `given` is followed by a capitalized word of its own (a surname): then the word
    before it is a noun in apposition ("die Dienstmagd Anna Kowalski"), not part of the name."""
    following = given + 1
    return (
        following < len(tokens)
        and _capitalized(tokens[following])
        and _adjacent(text, tokens[given], tokens[following])
    )


class HeuristicNameFilter:
    """Offline rules. Evidence that does not rest on capitals alone counts everywhere (in
    title-case headings, all caps and German too):

    1. a title, honorific or place word before the hit (Sig. Sordo, Via Moro, Herr Mohr), a
       place word after it (Gypsy Lane), name particles after a title or given name (rue de la
       Juiverie); Dutch place compounds (Moorplein);
    2. a given name or an initial right before the hit (Andreas Mohr, J. Savage), or a given
       name right after it (Mohr Andreas, Mohr, Andreas).

    Capitals are evidence only where they carry information: in languages that write common
    nouns in lower case, outside title-case or all-caps stretches (see `styled`):

    3. a lower-case vocabulary term written capitalized in mid-sentence, right beside another
       capitalized word whose capital is not explained by its place at the start of a sentence,
       is a name (Sordo Rossi); ethnonyms listed capitalized, such as 'Gypsy', are not affected;
       but three or more capitalized words side by side around a term that is not ambiguous, with
       no given name or title among them, are a title inside the sentence ("the novel Ten Little
       ... was renamed"); an ambiguous word keeps its name reading there (Birra Moretti);
    4. in German (outside title case), a hit of at most SURNAME_LETTERS letters beside a
       mid-sentence capitalized word the dictionary does not know (Heide Kowalczyk, Lüneburger
       Heide); a long compound there is no surname (Irrenanstalt Eglfing).
    """

    def __init__(self, lemmatizer: Lemmatizer) -> None:
        self.lemmatizer = lemmatizer

    def _unknown(self, token: Token, language: str) -> bool:
        known = self.lemmatizer.is_known
        return not (known(token.text, language) or known(token.text.lower(), language))

    def names(self, text: str, tokens: Sequence[Token], spans: Sequence[Span], language: str) -> set[int]:
        in_hits = {i for span in spans for i in range(span.first, span.last + 1)}
        return {
            n
            for n, span in enumerate(spans)
            if self._is_name(text, tokens, span.first, span.last, language, span.term, in_hits)
        }

    def _is_name(
        self, text: str, tokens: Sequence[Token], first: int, last: int, language: str, term: Term, in_hits: set[int]
    ) -> bool:
        token = tokens[first]
        if not _capitalized(token):
            return False
        lower_case_term = term.literal[:1].islower()
        if (
            first == last
            and is_given_name(token.text)
            and strip_marks(term.literal) != term.literal == term.literal.lower()
        ):
            # a given name that reaches the term only without the term's accents: "Ana escreveu:" is no "anã"
            return strip_marks(token.text) == token.text
        if language == "nl" and lower_case_term and token.text.lower().endswith(PLACE_SUFFIXES):
            return True
        before = tokens[first - 1] if first > 0 and _adjacent(text, tokens[first - 1], token) else None
        after = tokens[last + 1] if last + 1 < len(tokens) and _adjacent(text, tokens[last], tokens[last + 1]) else None
        if self._named_without_capitals(text, tokens, first, last, before, after):
            return True
        if _shouted(token) or styled(text, tokens, first, last, language):
            return False
        if after is not None and team_word(after):
            return False  # a team's name: "la squadra si chiama Polentoni United"
        if self._after_particles(text, tokens, first, lower_case_term, language):
            return True
        # Shouted words and other hits are not names ("CRIPPLE Faggots", "Junkies Faggots").
        neighbours = [
            (t, at)
            for t, at in ((before, first - 1), (after, last + 1))
            if t is not None and _capitalized(t) and not _shouted(t) and at not in in_hits
        ]
        if language in COMPOUND_LANGUAGES and len(text[token.start : tokens[last].end]) > SURNAME_LETTERS:
            # a long compound is a noun beside a name, not a surname: "als Provinciaal Krankzinnigengesticht"
            return False
        if language in NOUN_CAPITALIZING:
            # Every noun is capitalized: only a word the dictionary does not know, where its
            # capital is not owed to the start of a sentence, looks like a name; and only beside a
            # short word, as surnames are (Mohr, Heide), not a long compound (Irrenanstalt Eglfing, above).
            # After an article the hit is a noun before an institution's or a place's name, not a surname
            # ("im Irrenhaus Eichberg", "das Irrenhaus Eichberg").
            if before is not None and before.text.lower() in ARTICLES.get(language, frozenset()):
                return False
            return any(not sentence_initial(text, tokens, at) and self._unknown(t, language) for t, at in neighbours)
        if not term.ambiguous and _capitalized_run(text, tokens, first, last) >= 3:
            return False  # a title inside a sentence ("the novel Ten Little ... was renamed"), no name evidence
        # An article or small word written with a capital is a heading's style, not a name ("X1 A Welfare Queen").
        evidence = [
            t
            for t, at in neighbours
            if t.text.lower() not in SENTENCE_OPENERS
            and t.text.lower() not in TITLE_SMALL_WORDS
            and (not sentence_initial(text, tokens, at) or (at < first and self._unknown(t, language)))
        ]
        return bool(evidence) and lower_case_term and not sentence_initial(text, tokens, first)

    def _named_without_capitals(
        self, text: str, tokens: Sequence[Token], first: int, last: int, before: Token | None, after: Token | None
    ) -> bool:
        """Titles, honorifics, place words, given names and initials around the hit, or the hit
        itself a given name before a capitalized word (Ana Mouro, where Ana reads as anã)."""
        if after is not None and _capitalized(after) and is_given_name(tokens[first].text) and first == last:
            return True
        if before is not None and (
            before.text.lower() in NAME_MARKERS or is_given_name(before.text) or _initial(text, before)
        ):
            return True
        if (
            after is not None
            and _capitalized(after)
            and after.text.lower() in PLACE_WORDS
            and not (_shouted(after) and after.text.lower() in EVERYDAY_PLACE_WORDS)
        ):
            return True
        if (
            after is not None
            and _capitalized(after)
            and is_given_name(after.text)
            and not _full_name_after(text, tokens, last + 1)
        ):
            return True  # Mohr Andreas; but in "Dienstmagd Anna Kowalski" the hit stands before a whole name
        # catalogue order, surname first: "Mohr, Andreas", "Savage, J."; a given name after a word in lower case is
        # someone addressed ("Das sind Polacken, Kevin.")
        if (
            last + 1 < len(tokens)
            and text[tokens[last].end : tokens[last + 1].start] == ", "
            and (
                _initial(text, tokens[last + 1])
                or (is_given_name(tokens[last + 1].text) and (before is None or not before.text[:1].islower()))
            )
            and _sentence_ends(text, tokens, last + 1)
        ):
            return True
        return self._after_particles(text, tokens, first, False, "")

    def _after_particles(
        self, text: str, tokens: Sequence[Token], first: int, lower_case_term: bool, language: str
    ) -> bool:
        """A capitalized hit after name particles that follow a title, a place word or a given
        name (rue de la Juiverie, Ria de Mof) or, for terms written in lower case, a capitalized
        word the dictionary does not know (but the Estatuto do Índio is a law's title, where the
        word itself counts). Called with `language` empty for the first kind only."""
        i = first - 1
        while i >= 0 and tokens[i].text.lower() in NAME_PARTICLES and _adjacent(text, tokens[i], tokens[i + 1]):
            i -= 1
        if i == first - 1 or i < 0 or not _adjacent(text, tokens[i], tokens[i + 1]):
            return False
        head = tokens[i]
        if head.text.lower() in NAME_MARKERS or is_given_name(head.text):
            return True
        return (
            bool(language)
            and lower_case_term
            and _capitalized(head)
            and not head.text.isupper()
            and head.text.lower() not in SENTENCE_OPENERS
            and not sentence_initial(text, tokens, i)  # "Leesclub de Ouwe Taarten": the start's capital
            and self._unknown(head, language)
        )


def _sentence_ends(text: str, tokens: Sequence[Token], index: int) -> bool:
    """Whether nothing but punctuation or a line break follows tokens[index] before the next word."""
    if index + 1 >= len(tokens):
        return True
    between = text[tokens[index].end : tokens[index + 1].start]
    return any(c in between for c in ".!?;:()\n")


class StanzaNameFilter:
    """Named-entity recognition with Stanza; needs its models locally (never downloads)."""

    def __init__(self, languages: tuple[str, ...]) -> None:
        self._pipelines: dict[str, Any] = {lang: load_stanza_pipeline(lang, "tokenize,ner") for lang in languages}

    def names(self, text: str, tokens: Sequence[Token], spans: Sequence[Span], language: str) -> set[int]:
        pipeline = self._pipelines.get(language)
        if pipeline is None or not spans:
            return set()
        doc = pipeline(text)
        entities = [(e.start_char, e.end_char) for e in doc.ents if e.type in ("PER", "PERSON", "LOC", "GPE")]
        return {
            n
            for n, span in enumerate(spans)
            if any(s <= tokens[span.first].start and tokens[span.last].end <= e for s, e in entities)
        }
