"""The demo page's example texts: they load, cover every shipped language, and do what their titles say
when run through the real vocabulary pipeline with the shipped vocabularies."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

from engine.analysis import Analyzer
from engine.detector import Detector
from engine.events import Decision
from engine.paths import shipped_vocabularies
from engine.vocabulary.loader import load_vocabularies
from web.curated import DEMO_LANGUAGES
from web.examples import Example, ExamplesError, load_examples

EXAMPLES = load_examples()
AMBIGUOUS_TITLE = "Neutral use of an ambiguous word"
QUOTING_TITLE = "Quoting a slur to criticise it"


def example_id(example: Example) -> str:
    return f"{example.lang}:{example.title}"


@pytest.fixture(scope="session")
def shipped_detector(tmp_path_factory: pytest.TempPathFactory) -> Detector:
    vocabulary = load_vocabularies([shipped_vocabularies()])
    return Detector(vocabulary, cache_dir=tmp_path_factory.mktemp("examples-cache"))


def test_every_example_loads_as_a_value() -> None:
    assert len(EXAMPLES) == 3 * len(DEMO_LANGUAGES)
    for example in EXAMPLES:
        assert isinstance(example, Example)
        assert example.title and example.text == example.text.strip()


def test_demo_languages_are_the_shipped_vocabulary_languages() -> None:
    shipped = {p.name for p in shipped_vocabularies().iterdir() if p.is_dir()}
    assert set(DEMO_LANGUAGES) == shipped


def test_each_language_has_one_example_of_each_kind() -> None:
    assert Counter(e.lang for e in EXAMPLES) == dict.fromkeys(DEMO_LANGUAGES, 3)
    for lang in DEMO_LANGUAGES:
        titles = sorted(e.title for e in EXAMPLES if e.lang == lang)
        assert AMBIGUOUS_TITLE in titles and QUOTING_TITLE in titles
        assert [t for t in titles if t.startswith("Slur about ")], f"{lang} has no example of a slur about a group"


@pytest.mark.parametrize("example", EXAMPLES, ids=example_id)
def test_example_has_hits_in_its_language(example: Example, shipped_detector: Detector) -> None:
    detection = shipped_detector.detect(example.text, example.lang)
    assert detection.hits, f"no vocabulary term found in {example_id(example)}"
    if example.title == AMBIGUOUS_TITLE:
        assert all(hit.ambiguous for hit in detection.hits), [hit.surface for hit in detection.hits]
    else:
        assert any(not hit.ambiguous for hit in detection.hits), [hit.surface for hit in detection.hits]


@pytest.mark.parametrize("example", EXAMPLES, ids=example_id)
def test_example_language_is_detected(example: Example, shipped_detector: Detector) -> None:
    detection = shipped_detector.detect(example.text)
    assert detection.language_detected
    assert detection.language == example.lang


def write(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "examples.yaml"
    path.write_text(body, encoding="utf-8")
    return path


def test_a_valid_file_loads_in_order_with_whitespace_trimmed(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "examples:\n  - {lang: fr, title: ' Un ', text: \"  Bonjour.\\n\"}\n  - {lang: en, title: Two, text: Hello.}\n",
    )
    assert load_examples(path) == (Example("fr", "Un", "Bonjour."), Example("en", "Two", "Hello."))


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("- {lang: en, title: T, text: x}\n", "must be a mapping with the single key 'examples'"),
        ("examples: {lang: en}\n", "must be a mapping with the single key 'examples'"),
        ("examples: []\nextra: 1\n", "must be a mapping with the single key 'examples'"),
        ("examples:\n  - just text\n", "entry 1: must be a mapping with the keys lang, text, title"),
        (
            "examples:\n  - {lang: en, title: T, text: x}\n  - {lang: en, title: U, text: x, kind: slur}\n",
            "entry 2: unknown key(s) kind; accepted keys: lang, text, title",
        ),
        ("examples:\n  - {lang: en, text: x}\n", "entry 1: missing key(s) title"),
        ("examples:\n  - {lang: en, title: T, text: '  '}\n", "entry 1: 'text' must be a non-empty string, got '  '"),
        ("examples:\n  - {lang: en, title: 3, text: x}\n", "entry 1: 'title' must be a non-empty string, got 3"),
        ("examples:\n  - {lang: xx, title: T, text: x}\n", "entry 1: unknown language 'xx'; accepted: en, fr, el"),
        (
            "examples:\n  - {lang: en, title: T, text: x}\n  - {lang: en, title: T, text: y}\n",
            "entry 2: the title 'T' is already used for language 'en'",
        ),
        ("examples: [\n", "is not valid YAML"),
    ],
)
def test_invalid_files_are_rejected_with_file_entry_and_reason(tmp_path: Path, body: str, message: str) -> None:
    path = write(tmp_path, body)
    with pytest.raises(ExamplesError, match=re.escape(message)) as raised:
        load_examples(path)
    assert str(raised.value).startswith(str(path))
    assert raised.value.status == 500 and raised.value.code == "invalid-examples"


def test_a_missing_file_is_reported_with_its_path(tmp_path: Path) -> None:
    with pytest.raises(ExamplesError, match=re.escape(f"{tmp_path / 'nope.yaml'}: cannot be read")):
        load_examples(tmp_path / "nope.yaml")


@pytest.mark.parametrize("example", [e for e in EXAMPLES if e.title == QUOTING_TITLE], ids=example_id)
async def test_quoting_a_slur_to_criticise_it_is_explained_not_flagged(
    example: Example, shipped_detector: Detector
) -> None:
    """Use versus mention (docs/uses.md): the demo's counter-speech is not held against its author."""
    events = await Analyzer(shipped_detector).collect(example.text, example.lang)
    (decision,) = [e for e in events if isinstance(e, Decision)]
    assert decision.label == "not_flagged" and decision.uses, decision
    assert any("not held against the author" in reason for reason in decision.reasons)
