"""The compiled, per-language form of a vocabulary: a trie over lemma keys.

Each token of a term has one or more *keys* (its folded lemma and its folded surface), and the
trie holds every term under every combination of its tokens' keys. Matching walks the trie from
each text token whose keys are in the trie, so the cost per token does not grow with the
vocabulary: a dictionary lookup per step, as in Aho-Corasick over lemma sequences.

Computing keys needs the lemmatizer on every term token; the result is cached on disk, keyed by
the vocabulary version, the language and the lemmatizer id.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import tempfile
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from engine.text.lemmatizer import Lemmatizer
from engine.text.normalize import fold, strip_marks
from engine.text.tokenizer import RegexTokenizer
from engine.vocabulary.model import Issue, Term, Vocabulary

MAX_KEY_COMBINATIONS = 16
# Raised whenever KeyMaker computes other keys, so disk caches of the old keys are not read.
KEY_SCHEME = 2
_HYPHENATED_RE = re.compile(r"\w+(?:[-‐‑]\w+)+")


# Gender, number and case endings of adjectives, for languages where the lemmatizer may give
# each gender its own lemma (Italian clandestina / clandestino) or not know an inflected form;
# folded, longest first.
AGREEMENT_ENDINGS: dict[str, tuple[str, ...]] = {
    "it": ("i", "e", "o", "a"),
    "pt": ("os", "as", "es", "o", "a", "e"),
    "fr": ("es", "e", "s"),
    "el": ("ους", "ων", "ου", "ος", "οι", "ες", "ης", "η", "ο", "α", "ε"),
    "de": ("en", "er", "es", "em", "e"),  # for adjectives the dictionary lacks (versiffte)
    "nl": ("e",),
}


def agreement_key(folded_word: str, language: str) -> str | None:
    """A key shared by the gender and number forms of a word (clandestine, clandestino ->
    ~clandestin), used only for the words after the first of a multi-word term, so that an
    inflected modifier still continues a match the first word started ("immigrate clandestine"
    for "immigrato clandestino") without letting such loose keys start matches of their own."""
    endings = AGREEMENT_ENDINGS.get(language)
    if endings is None or len(folded_word) < 4:
        return None
    for ending in endings:
        if folded_word.endswith(ending) and len(folded_word) - len(ending) >= 4:
            return "~" + folded_word[: -len(ending)]
    return "~" + folded_word


def inflection_stem(word: str) -> str:
    """What a text word must begin with to count as an inflection of the folded term word `word`
    when `word` is not its own lemma: all but an ending of at most two letters, and at least four
    letters (or the whole of a shorter word).

    A lemma key stands for the whole paradigm of the lemma, which is right for a term listed as
    a lemma (cripple: cripples, crippled) but not for one listed as a derived or inflected form:
    "flaming" has the lemma "flame", and without this "flame retardant" would be a hit.
    """
    word = strip_marks(word)  # German plural umlauts: Irrenärzte admits Irrenarzt
    return word[: max(len(word) - 2, min(len(word), 4))]


@dataclass(slots=True)
class TrieNode:
    children: dict[str, TrieNode] = field(default_factory=dict)
    terms: list[Term] = field(default_factory=list)


def default_cache_dir() -> Path:
    if os.environ.get("UNERASE_CACHE_DIR"):
        return Path(os.environ["UNERASE_CACHE_DIR"])
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "unerase"


class KeyMaker:
    """Computes the matching keys of a token; the same function serves terms and texts.

    `aliases` maps folded inflected forms to folded lemma keys, so a form written without its
    accents (Greek γυφτους for γύφτους) still reaches its lemma, which the lemmatizer alone,
    looking up the exact spelling, would miss.
    """

    def __init__(self, lemmatizer: Lemmatizer, language: str, aliases: dict[str, str] | None = None) -> None:
        self.lemmatizer = lemmatizer
        self.language = language
        self.aliases = aliases or {}

    def __call__(self, token: str) -> tuple[str, ...]:
        language = self.language
        folded = fold(token, language)
        keys = [fold(self.lemmatizer.lemmatize(token, language), language), folded]
        if language == "de" and token[:1].islower():
            # German nouns are capitalized; a lowercased noun ("zigeunern") is unknown otherwise.
            keys.append(fold(self.lemmatizer.lemmatize(token.capitalize(), language), language))
        elif language == "de" and token[:1].isupper() and not token.isupper():
            # An adjective capitalized at the start of a term or a sentence ("Geistige
            # Behinderung", "Diebische Zigeuner") is read as a noun; its lower-case lemma
            # ("geistig") is what the inflected forms in running text ("geistiger") reach.
            keys.append(fold(self.lemmatizer.lemmatize(token.lower(), language), language))
        alias = self.aliases.get(folded)
        if alias is not None and not self.lemmatizer.is_known(token, language):
            # Only for a spelling the dictionary does not know as written: "caméra" is a word of
            # its own (lemma caméra), though its unaccented spelling is also a rare form of the
            # verb "camer", whose participle "camée" is a vocabulary term.
            keys.append(alias)
        return tuple(dict.fromkeys(k for k in keys if k))


@dataclass
class LanguageIndex:
    language: str
    root: TrieNode
    keys: frozenset[str]
    key_maker: KeyMaker
    single_terms: dict[str, list[Term]]  # key of a one-token term -> terms
    forms_by_length: dict[int, list[tuple[str, Term]]]  # folded literal of one-token terms
    max_term_tokens: int
    issues: dict[str, Issue]
    cache_hit: bool = False
    # folded one-word spellings of hyphenated terms (islamo-gauchiste -> islamogauchiste)
    joined: dict[str, list[Term]] = field(default_factory=dict)
    # term id -> per token, the stem a text word must begin with (see `inflection_stem`), or
    # None where any word with the token's keys will do; only terms with a stem are listed
    stems: dict[str, tuple[str | None, ...]] = field(default_factory=dict)

    def admits(self, term: Term, position: int, folded_word: str) -> bool:
        """Whether a text word (folded) that reached token `position` of `term` by its keys is
        that token's listed form or an inflection of it. The lemma itself counts when it is one
        (negers admits neger, aleijadas admits aleijado: curators often list only the forms that
        do not collide with other words); a lemma that is another word's base does not (flame
        for flaming), because it does not begin with the listed form's stem."""
        stems = self.stems.get(term.id)
        if stems is None:
            return True
        stem = stems[position]
        return stem is None or strip_marks(folded_word).startswith(stem)


@dataclass(frozen=True)
class CompiledKeys:
    """The lemmatizer's work on a vocabulary, cached on disk."""

    terms: dict[str, list[list[str]]]  # term id -> per token, its keys
    aliases: dict[str, str]  # folded inflected form -> folded lemma key


def compile_keys(vocabulary: Vocabulary, language: str, lemmatizer: Lemmatizer) -> CompiledKeys:
    tokenizer = RegexTokenizer()
    key_maker = KeyMaker(lemmatizer, language)
    terms = {
        term.id: [list(key_maker(word)) for word in tokenizer.words(term.literal)]
        for term in vocabulary.terms(language)
    }
    wanted = {key for per_token in terms.values() for keys in per_token for key in keys}
    folded_lemmas: dict[str, str] = {}
    aliases: dict[str, str] = {}
    for form, lemma in lemmatizer.inflections(language):
        key = folded_lemmas.get(lemma)
        if key is None:
            key = folded_lemmas[lemma] = fold(lemma, language)
        if key in wanted:
            folded_form = fold(form, language)
            if folded_form != key and folded_form not in wanted:
                aliases.setdefault(folded_form, key)
    return CompiledKeys(terms, aliases)


def load_keys(
    vocabulary: Vocabulary, language: str, lemmatizer: Lemmatizer, cache_dir: Path | None
) -> tuple[CompiledKeys, bool]:
    """Compiled keys, read from the disk cache when present; returns (keys, cache_hit)."""
    path = None
    if cache_dir is not None:
        name = f"keys-v{KEY_SCHEME}-{vocabulary.version}-{language}-{lemmatizer.id}.json"
        path = cache_dir / name.replace("/", "_")
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            return CompiledKeys(data["terms"], data["aliases"]), True
        except (OSError, ValueError, KeyError, TypeError):
            pass  # missing or damaged: rebuild
    compiled = compile_keys(vocabulary, language, lemmatizer)
    if path is not None:
        payload = {"terms": compiled.terms, "aliases": compiled.aliases}
        _write_atomically(path, json.dumps(payload, ensure_ascii=False))
    return compiled, False


def _write_atomically(path: Path, text: str) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("w", encoding="utf-8", dir=path.parent, delete=False) as tmp:
            tmp.write(text)
        os.replace(tmp.name, path)
    except OSError:
        pass  # a read-only cache folder only costs speed


def build_index(
    vocabulary: Vocabulary,
    language: str,
    lemmatizer: Lemmatizer,
    cache_dir: Path | None = None,
) -> LanguageIndex:
    compiled, cache_hit = load_keys(vocabulary, language, lemmatizer, cache_dir)
    token_keys = compiled.terms
    key_maker = KeyMaker(lemmatizer, language, compiled.aliases)
    root = TrieNode()
    all_keys: set[str] = set()
    single_terms: dict[str, list[Term]] = defaultdict(list)
    forms_by_length: dict[int, list[tuple[str, Term]]] = defaultdict(list)
    max_tokens = 1
    stems: dict[str, tuple[str | None, ...]] = {}
    joined: dict[str, list[Term]] = defaultdict(list)
    words = RegexTokenizer().words
    for term in vocabulary.terms(language):
        per_token = token_keys.get(term.id) or []
        if not per_token or not all(per_token):
            continue  # a literal with no word characters cannot be matched
        folded_words = [fold(word, language) for word in words(term.literal)]
        if len(folded_words) == len(per_token):
            # the lemma key comes first; a word that is not its own lemma only admits its inflections
            term_stems = tuple(
                strip_marks(word) if term.exact else inflection_stem(word) if keys[0] != word else None
                for word, keys in zip(folded_words, per_token, strict=True)
            )
            if any(term_stems):
                stems[term.id] = term_stems
        max_tokens = max(max_tokens, len(per_token))
        for keys in per_token:
            all_keys.update(keys)
        paths = per_token
        if len(per_token) > 1 and language in AGREEMENT_ENDINGS and len(folded_words) == len(per_token):
            agreement = [agreement_key(word, language) for word in folded_words]
            paths = [
                per_token[0],
                *([*keys, key] if key else keys for keys, key in zip(per_token[1:], agreement[1:], strict=True)),
            ]
        for path in itertools.islice(itertools.product(*paths), MAX_KEY_COMBINATIONS):
            node = root
            for key in path:
                node = node.children.setdefault(key, TrieNode())
            if term not in node.terms:
                node.terms.append(term)
        if len(per_token) > 1 and _HYPHENATED_RE.fullmatch(term.literal):
            joined["".join(folded_words)].append(term)
        if len(per_token) == 1:
            for key in per_token[0]:
                single_terms[key].append(term)
            form = fold(term.literal, language)
            forms_by_length[len(form)].append((form, term))
    return LanguageIndex(
        language=language,
        root=root,
        keys=frozenset(all_keys),
        key_maker=key_maker,
        single_terms=dict(single_terms),
        forms_by_length=dict(forms_by_length),
        max_term_tokens=max_tokens,
        issues={issue.id: issue for issue in vocabulary.issues if issue.language == language},
        cache_hit=cache_hit,
        stems=stems,
        joined={form: terms for form, terms in joined.items() if form not in all_keys},
    )
