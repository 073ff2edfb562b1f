"""The demo forum thread shown on /demo/forum, with the unerase widget beside each post (web/forum.yaml).

Like the demo examples, the thread is hand-curated data, so it is checked strictly when loaded: a
misspelt key, an unknown language or a duplicated post id should stop the app at start-up rather than
render a broken demo page. Each post also declares what the vocabulary pipeline is expected to find
in it (`expect`), so the tests can keep the thread honest as the vocabularies change.
"""

from __future__ import annotations

import datetime
import re
from dataclasses import dataclass
from pathlib import Path

from engine.errors import UneraseError
from web.curated import check_keys, language, read_yaml, string

DEFAULT_PATH = Path(__file__).with_name("forum.yaml")
THREAD_KEYS = frozenset({"title", "lang", "posts"})
POST_KEYS = frozenset({"id", "author", "when", "lang", "expect", "text", "quotes"})
OPTIONAL_POST_KEYS = frozenset({"quotes"})
# What the vocabulary pipeline should find in a post: a non-ambiguous term, only ambiguous terms, or nothing.
EXPECTATIONS = ("flagged", "mention", "ambiguous", "clean")
# Post ids end up in HTML id attributes and URL fragments, so they are kept to a plain slug.
POST_ID_RE = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")


class ForumError(UneraseError):
    """The forum thread file is missing or malformed; a deployment problem, not a user's mistake."""

    status = 500
    code = "invalid-forum"


@dataclass(frozen=True, slots=True)
class Post:
    id: str
    author: str
    when: str
    lang: str
    text: str
    expect: str
    quotes: str | None = None  # the id of an earlier post this one quotes before its reply


@dataclass(frozen=True, slots=True)
class Thread:
    title: str
    lang: str
    posts: tuple[Post, ...]

    def quoted(self, post: Post) -> Post | None:
        """The earlier post that `post` quotes, if any."""
        return next((p for p in self.posts if p.id == post.quotes), None)

    def widget_text(self, post: Post, wrote: str) -> str:
        """The text the widget sends for `post` as templates/forum.html renders it: the quoted post's lines, its
        header (`wrote`, "{author} wrote:" in the page's language) first, open with "> ", then the reply."""
        quoted = self.quoted(post)
        if quoted is None:
            return post.text
        return f"> {wrote.format(author=quoted.author)}\n> {quoted.text}\n{post.text}"


def load_thread(path: Path = DEFAULT_PATH) -> Thread:
    """Read and validate the thread file; raise ForumError naming the file, post and problem."""
    data = read_yaml(path, "a forum thread YAML file", ForumError)
    if not isinstance(data, dict):
        raise ForumError(f"{path}: must be a mapping with the keys {', '.join(sorted(THREAD_KEYS))}")
    _check_keys(data, THREAD_KEYS, str(path))
    title, lang = _string(data, "title", str(path)), _language(data, str(path))
    if not isinstance(data["posts"], list) or not data["posts"]:
        raise ForumError(f"{path}: 'posts' must be a non-empty list of posts, got {data['posts']!r}")
    posts = tuple(_post(entry, f"{path}: post {number}") for number, entry in enumerate(data["posts"], 1))
    seen: set[str] = set()
    for number, post in enumerate(posts, 1):
        if post.id in seen:
            raise ForumError(f"{path}: post {number}: the id '{post.id}' is already used; post ids must be unique")
        if post.quotes is not None and post.quotes not in seen:
            raise ForumError(
                f"{path}: post {number}: quotes '{post.quotes}', which is not the id of an earlier post in the thread"
            )
        seen.add(post.id)
    return Thread(title=title, lang=lang, posts=posts)


def _post(entry: object, where: str) -> Post:
    if not isinstance(entry, dict):
        raise ForumError(f"{where}: must be a mapping with the keys {', '.join(sorted(POST_KEYS))}")
    check_keys(entry, POST_KEYS, where, ForumError, OPTIONAL_POST_KEYS)
    post_id = _string(entry, "id", where)
    if not POST_ID_RE.fullmatch(post_id):
        raise ForumError(
            f"{where}: invalid id '{post_id}'; use lowercase letters and digits separated by single hyphens"
        )
    expect = _string(entry, "expect", where)
    if expect not in EXPECTATIONS:
        raise ForumError(f"{where}: unknown expect '{expect}'; accepted: {', '.join(EXPECTATIONS)}")
    return Post(
        id=post_id,
        author=_string(entry, "author", where),
        when=_when(entry, where),
        lang=_language(entry, where),
        text=_string(entry, "text", where),
        expect=expect,
        quotes=_string(entry, "quotes", where) if "quotes" in entry else None,
    )


def _check_keys(mapping: dict[object, object], accepted: frozenset[str], where: str) -> None:
    check_keys(mapping, accepted, where, ForumError)


def _string(mapping: dict[object, object], key: str, where: str) -> str:
    return string(mapping, key, where, ForumError)


def _when(mapping: dict[object, object], where: str) -> str:
    # YAML reads an unquoted ISO timestamp as a datetime; keep it, in ISO form, rather than make curators quote it.
    value = mapping["when"]
    if isinstance(value, datetime.date):
        return value.isoformat()
    return _string(mapping, "when", where)


def _language(mapping: dict[object, object], where: str) -> str:
    return language(mapping, where, ForumError)
