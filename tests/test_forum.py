"""The demo forum thread: it loads strictly, mixes the shipped languages, and every post does what its
declared `expect` says when run through the real vocabulary pipeline with the shipped vocabularies."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

from engine.analysis import Analyzer, BackendRouter
from engine.cache import MemoryCache
from engine.detector import Detector
from engine.events import Decision, Verdict
from engine.paths import shipped_vocabularies
from engine.vocabulary.loader import load_vocabularies
from web.curated import DEMO_LANGUAGES
from web.forum import EXPECTATIONS, ForumError, Post, Thread, load_thread
from web.i18n import lookup

THREAD = load_thread()
# A span between the quotation marks of the thread's languages; counter-speech quotes the slur it criticises.
# Single quotes are left out because French and English apostrophes would be taken for them.
QUOTED_RE = re.compile(r'"[^"]*"|«[^»]*»|“[^”]*”|„[^“]*“')


def post_id(post: Post) -> str:
    return f"{post.lang}:{post.id}"


def sent(post: Post) -> str:
    """What the widget sends for the post on the English page: a quoted post's lines first, then the reply."""
    return THREAD.widget_text(post, lookup("forum.wrote", "en"))


@pytest.fixture(scope="session")
def shipped_detector(tmp_path_factory: pytest.TempPathFactory) -> Detector:
    vocabulary = load_vocabularies([shipped_vocabularies()])
    return Detector(vocabulary, cache_dir=tmp_path_factory.mktemp("forum-cache"))


def test_the_shipped_thread_loads_as_values() -> None:
    assert isinstance(THREAD, Thread) and THREAD.title and THREAD.lang in DEMO_LANGUAGES
    assert 10 <= len(THREAD.posts) <= 16
    for post in THREAD.posts:
        assert isinstance(post, Post)
        assert post.author and post.when and post.text == post.text.strip()
        assert 1 <= len(re.findall(r"[.!?](?:\s|$)", post.text)) <= 4, f"{post.id} should have 1-4 sentences"


def test_post_ids_are_unique() -> None:
    ids = [post.id for post in THREAD.posts]
    assert len(ids) == len(set(ids))


def test_the_thread_is_mostly_english_with_every_shipped_language() -> None:
    counts = Counter(post.lang for post in THREAD.posts)
    assert set(counts) == set(DEMO_LANGUAGES)
    assert counts.most_common(1)[0][0] == "en" and counts["en"] > counts["fr"]
    assert counts["fr"] >= 2 and counts["el"] >= 2


def test_every_role_is_represented_several_times() -> None:
    counts = Counter(post.expect for post in THREAD.posts)
    assert all(counts[role] >= 3 for role in EXPECTATIONS), counts


@pytest.mark.parametrize("post", THREAD.posts, ids=post_id)
def test_post_matches_its_declared_role(post: Post, shipped_detector: Detector) -> None:
    detection = shipped_detector.detect(sent(post), post.lang)
    surfaces = [hit.surface for hit in detection.hits]
    if post.expect == "clean":
        assert not detection.hits, f"{post.id} was meant to be free of vocabulary terms: {surfaces}"
    elif post.expect == "ambiguous":
        assert detection.hits and all(hit.ambiguous for hit in detection.hits), surfaces
    else:
        assert any(not hit.ambiguous for hit in detection.hits), surfaces
    for hit in detection.hits:
        assert sent(post)[hit.start : hit.end] == hit.surface


@pytest.mark.parametrize("post", THREAD.posts, ids=post_id)
def test_post_language_is_detected(post: Post, shipped_detector: Detector) -> None:
    # The widget may be embedded without a language; the posts must then still be read in the right one.
    detection = shipped_detector.detect(sent(post))
    assert detection.language_detected and detection.language == post.lang


def test_a_mention_post_quotes_a_slur_to_criticise_it(shipped_detector: Detector) -> None:
    quoted = []
    for post in THREAD.posts:
        spans = [match.span() for match in QUOTED_RE.finditer(post.text)]
        for hit in shipped_detector.detect(post.text, post.lang).hits:
            if not hit.ambiguous and any(start < hit.start and hit.end < end for start, end in spans):
                quoted.append((post.id, hit.surface))
    assert quoted, "no post quotes the slur it criticises"


def test_markup_in_a_post_is_kept_as_plain_text_beside_a_slur(shipped_detector: Detector) -> None:
    markup = [post for post in THREAD.posts if "<script>" in post.text and "onerror=" in post.text]
    assert len(markup) == 1
    (post,) = markup
    assert post.expect == "mention"  # it reports the slur it found, to have it deleted
    hits = shipped_detector.detect(post.text, post.lang).hits
    assert any(not hit.ambiguous for hit in hits)
    assert all("<" not in hit.surface and ">" not in hit.surface for hit in hits)


@pytest.mark.parametrize("post", THREAD.posts, ids=post_id)
async def test_vocabulary_only_decision_follows_the_declared_role(post: Post, shipped_detector: Detector) -> None:
    # Without a language model an ambiguous term cannot be settled unless its sense cues settle it.
    events = await Analyzer(shipped_detector, BackendRouter(), cache=MemoryCache()).collect(sent(post), post.lang)
    (decision,) = [event for event in events if isinstance(event, Decision)]
    verdicts = [event for event in events if isinstance(event, Verdict)]
    if post.expect == "flagged":
        assert decision.label == "flagged"
    elif post.expect == "mention":
        # a slur quoted or reported to criticise it: explained ("About this word"), never held against its author
        assert decision.label == "not_flagged" and decision.uses
        assert any(v.status == "contentious" and v.use in ("quoted", "reported") for v in verdicts)
    elif post.expect == "clean":
        assert decision.label == "not_flagged" and not verdicts
    elif decision.label == "needs_review":
        assert any(verdict.status == "undetermined" for verdict in verdicts)
    else:
        assert decision.label == "not_flagged" and not decision.uses  # nothing to read about: no button
        # settled by sense cues, or a self-reference ("I'm a native speaker") whose sense stays honestly undecided
        assert all(
            (v.status, v.decided_by) == ("neutral", "sense-cues") or (v.status == "undetermined" and v.mention)
            for v in verdicts
        )


async def test_some_ambiguous_post_is_left_for_review_without_a_model(shipped_detector: Detector) -> None:
    labels = []
    for post in (post for post in THREAD.posts if post.expect == "ambiguous"):
        events = await Analyzer(shipped_detector, BackendRouter(), cache=MemoryCache()).collect(sent(post), post.lang)
        labels += [event.label for event in events if isinstance(event, Decision)]
    assert "needs_review" in labels, "every ambiguous post is settled by sense cues; the demo shows no deferral"


POST = "{id: p1, author: a, when: 1 h ago, lang: en, expect: clean, text: Hi.}"


def write(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "forum.yaml"
    path.write_text(body, encoding="utf-8")
    return path


def test_a_valid_file_loads_in_order_with_whitespace_trimmed(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "title: ' Hello '\nlang: fr\nposts:\n"
        "  - {id: first-post, author: ' zoé ', when: 2024-06-14T10:00:00Z, lang: fr, expect: flagged,\n"
        '     text: " Salut.\\n"}\n'
        f"  - {POST}\n",
    )
    assert load_thread(path) == Thread(
        title="Hello",
        lang="fr",
        posts=(
            Post(
                id="first-post",
                author="zoé",
                when="2024-06-14T10:00:00+00:00",
                lang="fr",
                text="Salut.",
                expect="flagged",
            ),
            Post(id="p1", author="a", when="1 h ago", lang="en", text="Hi.", expect="clean"),
        ),
    )


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("- just a list\n", "must be a mapping with the keys lang, posts, title"),
        (f"title: T\nposts: [{POST}]\n", ": missing key(s) lang; accepted keys: lang, posts, title"),
        (
            f"title: T\nlang: en\nforum: x\nposts: [{POST}]\n",
            ": unknown key(s) forum; accepted keys: lang, posts, title",
        ),
        (f"title: '  '\nlang: en\nposts: [{POST}]\n", ": 'title' must be a non-empty string, got '  '"),
        (f"title: T\nlang: xx\nposts: [{POST}]\n", ": unknown language 'xx'; accepted: en, fr, el"),
        ("title: T\nlang: en\nposts: []\n", ": 'posts' must be a non-empty list of posts, got []"),
        ("title: T\nlang: en\nposts: {id: p1}\n", ": 'posts' must be a non-empty list of posts"),
        (
            "title: T\nlang: en\nposts: [hello]\n",
            "post 1: must be a mapping with the keys author, expect, id, lang, quotes, text",
        ),
        (
            f"title: T\nlang: en\nposts:\n  - {POST}\n  - {{id: p2, author: a, when: 1, lang: en, text: x, mood: 1}}\n",
            "post 2: unknown key(s) mood; missing key(s) expect; accepted keys: author, expect, id, lang, quotes, "
            "text, when",
        ),
        (
            "title: T\nlang: en\nposts:\n"
            f"  - {{id: p0, author: a, when: now, lang: en, expect: clean, text: x, quotes: p1}}\n  - {POST}\n",
            "post 1: quotes 'p1', which is not the id of an earlier post in the thread",
        ),
        (
            "title: T\nlang: en\nposts: [{id: p1, author: 7, when: now, lang: en, expect: clean, text: x}]\n",
            "post 1: 'author' must be a non-empty string, got 7",
        ),
        (
            "title: T\nlang: en\nposts: [{id: My Post, author: a, when: now, lang: en, expect: clean, text: x}]\n",
            "post 1: invalid id 'My Post'; use lowercase letters and digits separated by single hyphens",
        ),
        (
            "title: T\nlang: en\nposts: [{id: p1, author: a, when: now, lang: en, expect: hateful, text: x}]\n",
            "post 1: unknown expect 'hateful'; accepted: flagged, mention, ambiguous, clean",
        ),
        (
            "title: T\nlang: en\nposts: [{id: p1, author: a, when: now, lang: es, expect: clean, text: x}]\n",
            "post 1: unknown language 'es'; accepted: en, fr, el",
        ),
        (
            f"title: T\nlang: en\nposts: [{POST}, {POST}]\n",
            "post 2: the id 'p1' is already used; post ids must be unique",
        ),
        ("title: [\n", "is not valid YAML"),
    ],
)
def test_invalid_files_are_rejected_with_file_post_and_reason(tmp_path: Path, body: str, message: str) -> None:
    path = write(tmp_path, body)
    with pytest.raises(ForumError, match=re.escape(message)) as raised:
        load_thread(path)
    assert str(raised.value).startswith(str(path))
    assert raised.value.status == 500 and raised.value.code == "invalid-forum"


def test_a_missing_file_is_reported_with_its_path(tmp_path: Path) -> None:
    with pytest.raises(ForumError, match=re.escape(f"{tmp_path / 'nope.yaml'}: cannot be read")):
        load_thread(tmp_path / "nope.yaml")


def test_a_reply_sends_the_post_it_quotes_as_quoted_lines_and_is_explained_not_flagged() -> None:
    """The thread's reply to the flagged post: the widget sends the quoted post as "> " lines (templates/forum.html
    renders it as a <blockquote>), and the slur in it is read as another user's words."""
    replies = [post for post in THREAD.posts if post.quotes]
    assert replies, "no post in the thread quotes another"
    for post in replies:
        quoted = THREAD.quoted(post)
        assert quoted is not None and quoted.expect == "flagged" and post.expect == "mention"
        assert sent(post) == f"> {quoted.author} wrote:\n> {quoted.text}\n{post.text}"


async def test_the_quoted_post_is_read_as_quoted_and_the_reply_decides_nothing_else(
    shipped_detector: Detector,
) -> None:
    (post,) = [post for post in THREAD.posts if post.quotes]
    events = await Analyzer(shipped_detector, BackendRouter(), cache=MemoryCache()).collect(sent(post), post.lang)
    verdicts = [event for event in events if isinstance(event, Verdict)]
    assert verdicts and all(v.use == "quoted" for v in verdicts)
    (decision,) = [event for event in events if isinstance(event, Decision)]
    assert decision.label == "not_flagged"
