"""The reader-facing pages in the reader's language.

The strings live in web/locales/<lang>.yaml, English the source: every key exists there, and a key missing from
another language falls back to English. The language of a request is, in this order: a `lang` query parameter (which
also sets the `unerase_lang` cookie, so the choice sticks), that cookie, the browser's `Accept-Language`, English.

The middleware keeps the choice in a context variable for the request, so that templates, imported macros and the
SSE renderer (which renders fragments long after the route returned) all read it without it being passed around.
Every page follows these rules, the pages of moderators, archivists and admins as well as the readers' ones.
"""

from __future__ import annotations

import re
from contextvars import ContextVar
from functools import cache
from http.cookies import SimpleCookie
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import yaml
from markupsafe import Markup, escape
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from web.language_names import language_name

LOCALES = Path(__file__).resolve().parent / "locales"
LANGUAGES = ("en", "fr", "el", "de", "nl", "it", "pt")
SOURCE = "en"
COOKIE = "unerase_lang"
COOKIE_SECONDS = 365 * 24 * 3600

current: ContextVar[str] = ContextVar("unerase_lang", default=SOURCE)


@cache
def catalogue(lang: str) -> dict[str, str]:
    """One language's strings, key -> text (read once)."""
    data = yaml.safe_load((LOCALES / f"{lang}.yaml").read_text(encoding="utf-8")) or {}
    if not isinstance(data, dict) or not all(isinstance(v, str) for v in data.values()):
        raise ValueError(f"{LOCALES / f'{lang}.yaml'}: expected a mapping of keys to strings")
    return {str(k): v for k, v in data.items()}


def lookup(key: str, lang: str | None = None) -> str:
    """The string for key in lang (default: the request's), English when lang lacks it."""
    strings = catalogue(lang or current.get())
    if key in strings:
        return strings[key]
    return catalogue(SOURCE)[key]  # a key English lacks is a programming error: KeyError


def text(key: str, lang: str | None = None, **params: Any) -> str:
    """Plain text, for Python callers; `{name}` placeholders filled from params."""
    return lookup(key, lang).format(**params) if params else lookup(key, lang)


def plural_key(key: str, count: int, lang: str | None = None) -> str:
    # French counts 0 and 1 as singular; the other six languages only 1
    one = count in (0, 1) if (lang or current.get()) == "fr" else count == 1
    return f"{key}.{'one' if one else 'other'}"


def t(key: str, **params: Any) -> Markup:
    """For templates: the string escaped, parameters escaped unless already markup (a `<bdi>` isolate).

    Without parameters the placeholders stay as they are: a script fills them (demo.js, the elapsed time)."""
    words = Markup(escape(lookup(key)))
    return words.format(**params) if params else words


def tn(key: str, count: int, **params: Any) -> Markup:
    """`key.one` or `key.other` by count, with `{count}` filled."""
    return t(plural_key(key, count), count=count, **params)


_TAG = re.compile(r"^([A-Za-z]{1,8})(?:-[A-Za-z0-9]{1,8})*$")


def negotiate(header: str | None) -> str | None:
    """The best of our languages for an Accept-Language header ("fr-CA, de;q=0.5" -> "fr"), None if none fits.

    Malformed entries are skipped, not fatal: a browser's header is input like any other."""
    ranked: list[tuple[float, int, str]] = []
    for position, entry in enumerate((header or "").split(",")[:32]):
        tag, _, rest = entry.strip().partition(";")
        match = _TAG.match(tag.strip())
        if not match:
            continue
        quality = 1.0
        param = rest.strip()
        if param:
            name, _, value = param.partition("=")
            if name.strip().lower() != "q":
                continue
            try:
                quality = float(value)
            except ValueError:
                continue
            if not 0 < quality <= 1:
                continue
        primary = match[1].lower()
        if primary in LANGUAGES:
            ranked.append((-quality, position, primary))
    return min(ranked)[2] if ranked else None


def known(value: str | None) -> str | None:
    value = (value or "").strip().lower()
    return value if value in LANGUAGES else None


def choose(path: str, query: str, cookie_header: str, accept_language: str | None) -> tuple[str, str | None]:
    """(the page's language, a language to remember in the cookie or None)."""
    asked = known((parse_qs(query).get("lang") or [""])[0])
    if asked:
        return asked, asked
    cookies = SimpleCookie()
    try:
        cookies.load(cookie_header)
    except Exception:  # a malformed Cookie header: no remembered choice
        cookies = SimpleCookie()
    remembered = known(cookies[COOKIE].value) if COOKIE in cookies else None
    return remembered or negotiate(accept_language) or SOURCE, None


def switcher_links(url: Any) -> list[tuple[str, str, str]]:
    """(code, the language's own name (web/language_names.py), link) for the switcher: the same page with `lang` set.

    The link is relative ("?lang=de"): it resolves against the address the browser shows, which the demo changes to
    the permalink after "Analyse" without reloading the header; a path written here would lose the result."""
    links = []
    for code in LANGUAGES:
        links.append((code, language_name(code), f"?{url.include_query_params(lang=code).query}"))
    return links


class Language:
    """ASGI middleware: picks the request's language, remembers an explicit choice, and marks HTML responses as
    varying with the headers that chose it (a shared cache must not hand a French page to a German reader)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        query = scope.get("query_string", b"").decode("latin-1") if scope.get("method") in ("GET", "HEAD") else ""
        lang, remember = choose(scope.get("path", ""), query, headers.get("cookie", ""), headers.get("accept-language"))

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                raw = list(message.get("headers", []))
                content_type = next((v for k, v in raw if k.lower() == b"content-type"), b"")
                if content_type.startswith(b"text/html") or content_type.startswith(b"text/event-stream"):
                    raw.append((b"vary", b"Accept-Language, Cookie"))
                    if remember:
                        cookie = f"{COOKIE}={remember}; Max-Age={COOKIE_SECONDS}; Path=/; HttpOnly; SameSite=Lax"
                        raw.append((b"set-cookie", cookie.encode("latin-1")))
                message = {**message, "headers": raw}
            await send(message)

        token = current.set(lang)
        try:
            await self.app(scope, receive, send_with_headers)
        finally:
            current.reset(token)


def detail_lang() -> Markup:
    """` lang="en"` on an element holding a detail the code wrote in English (an engine's reason, a row's error),
    when the page is in another language: a screen reader then pronounces it as English."""
    return Markup(' lang="en"') if current.get() != SOURCE else Markup("")


def label_words(label: Any) -> str:
    """A decision label as the pages say it ("needs_review" -> "needs review"), in the page's language."""
    key = f"label.{label}"
    return lookup(key) if key in catalogue(SOURCE) else str(label).replace("_", " ")


def install(env: Any) -> None:
    env.globals["t"] = t
    env.globals["tn"] = tn
    env.globals["ui_lang"] = current.get
    env.globals["ui_languages"] = switcher_links
    env.globals["has_t"] = lambda key: key in catalogue(SOURCE)
    env.globals["detail_lang"] = detail_lang
    # markup placed into a translated sentence: a command or a code, a link
    env.globals["code_markup"] = lambda value: Markup("<code>%s</code>") % value
    env.globals["link_markup"] = lambda href, words: Markup('<a href="%s">%s</a>') % (href, words)
    env.globals["download_link"] = lambda id, href, words: (
        Markup('<a id="%s" href="%s" download>%s</a>')
        % (
            id,
            href,
            words,
        )
    )
    env.filters["label"] = label_words
    env.filters["role"] = lambda role: lookup(f"role.{role}") if f"role.{role}" in catalogue(SOURCE) else role
    # a colon before a line break or closing tag: French keeps its no-break space before the colon
    env.filters["rstrip"] = lambda value: value.rstrip(" ")
    env.filters["strong"] = lambda value: Markup("<strong>%s</strong>") % value
