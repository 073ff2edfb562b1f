"""Sites that embed the widget: registry, origin checks (CORS) and per-site rate limits.

A site key is public — it is written in the forum's pages — so it grants nothing by itself:
requests are accepted only from the site's allowed origins (or from this server's own pages),
and each site has its own rate limit per client.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import secrets
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col, select

from engine.errors import UneraseError
from engine.scope import Scope
from web import changes
from web.models import Feedback, ServerSecret, Site, SiteTermRule
from web.ratelimit import MemoryBuckets, RateLimiter, TokenBuckets
from web.store import Store

# a change made in another process is announced on the change feed (web/changes.py); this is the fallback
CACHE_SECONDS = 5.0
DEMO_SITE = "demo"


class Forbidden(UneraseError):
    status = 403
    code = "origin-not-allowed"


class OriginRequired(Forbidden):
    code = "origin-required"


class UnknownSite(UneraseError):
    status = 404
    code = "unknown-site"


UNDECIDED_DISPLAYS = ("nothing", "about", "review")


def undecided_display(value: str) -> str:
    """A valid `show_undecided` value, or a clear error naming the accepted ones."""
    if value not in UNDECIDED_DISPLAYS:
        raise UneraseError(
            f"show_undecided '{value}' is not known; accepted: {', '.join(UNDECIDED_DISPLAYS)} "
            "(what readers see on a post nothing could decide)"
        )
    return value


def new_key() -> str:
    return "s_" + secrets.token_urlsafe(18)


def origins_of(site: Site) -> list[str]:
    origins: list[str] = json.loads(site.allowed_origins)
    return origins


def languages_of(site: Site) -> list[str]:
    languages: list[str] = json.loads(site.languages)
    return languages


def normalise_origin(origin: str) -> str:
    origin = origin.strip().rstrip("/")
    if not origin.startswith(("http://", "https://")) or origin.count("/") != 2:
        raise UneraseError(f"'{origin}' is not an origin; write it as scheme://host[:port], e.g. https://forum.example")
    return origin


def site_to_dict(site: Site) -> dict[str, Any]:
    return {
        "key": site.key,
        "name": site.name,
        "allowed_origins": origins_of(site),
        "languages": languages_of(site),
        "mode": site.mode,
        "threshold": site.threshold,
        "store": site.store,
        "show_checked": site.show_checked,
        "show_undecided": site.show_undecided,
        "rate_limit_per_minute": site.rate_limit_per_minute,
        "values": {
            "tp": site.value_tp,
            "tn": site.value_tn,
            "fp": site.value_fp,
            "fn": site.value_fn,
            "r": site.value_r,
        },
        "calibration": json.loads(site.calibration) if site.calibration else None,
    }


@dataclass
class Sites:
    store: Store
    buckets: TokenBuckets = field(default_factory=MemoryBuckets)  # where the per-client limits are counted
    _cache: dict[str, tuple[float, Site | None]] = field(default_factory=dict)
    _limiters: dict[str, RateLimiter] = field(default_factory=dict)
    _scopes: dict[str, tuple[float, Scope]] = field(default_factory=dict)
    _key: bytes | None = None  # the key of reader hashes, read once

    def cached(self, key: str) -> tuple[bool, Site | None]:
        """(known, site) from memory only: the widget's hot path needs no thread or database."""
        entry = self._cache.get(key)
        if entry is not None and entry[0] > time.monotonic():
            return True, entry[1]
        return False, None

    # -- blocking: database ---------------------------------------------------------------
    def get(self, key: str) -> Site | None:
        cached = self._cache.get(key)
        if cached is not None and cached[0] > time.monotonic():
            return cached[1]
        with Session(self.store.engine, expire_on_commit=False) as session:
            site = session.get(Site, key)
        self._cache[key] = (time.monotonic() + CACHE_SECONDS, site)
        return site

    def scope(self, key: str) -> Scope:
        """The site's term rules for its analyses (cached like the site: another worker's change shows within
        CACHE_SECONDS)."""
        cached = self._scopes.get(key)
        if cached is not None and cached[0] > time.monotonic():
            return cached[1]
        excluded: set[str] = set()
        ambiguous: set[str] = set()
        for rule in self.term_rules(key):
            (excluded if rule.rule == "exclude" else ambiguous).add(rule.term_id)
        scope = Scope(key, frozenset(excluded), frozenset(ambiguous))
        self._scopes[key] = (time.monotonic() + CACHE_SECONDS, scope)
        return scope

    def term_rules(self, key: str) -> list[SiteTermRule]:
        with Session(self.store.engine) as session:
            query = select(SiteTermRule).where(SiteTermRule.site_key == key).order_by(col(SiteTermRule.term_id))
            return list(session.exec(query))

    def forget(self, key: str) -> None:
        """Drops what this process remembers of a site, after a change (here, or announced by the change feed)."""
        self._cache.pop(key, None)
        self._scopes.pop(key, None)
        self._limiters.pop(key, None)

    def all(self) -> list[Site]:
        with Session(self.store.engine) as session:
            return list(session.exec(select(Site).order_by(col(Site.created_at))))

    def save(self, site: Site) -> Site:
        with Session(self.store.engine, expire_on_commit=False) as session:
            session.add(site)
            changes.record(session, changes.SITE, site.key)  # other processes forget their copy
            session.commit()
        self.forget(site.key)
        return site

    def ensure_demo(self) -> None:
        """The demo forum's site: this server's own pages only."""
        if self.get(DEMO_SITE) is not None:
            return
        with contextlib.suppress(IntegrityError):  # another worker starting at the same moment made it first
            self.save(Site(key=DEMO_SITE, name="unerase demo forum", show_checked=True, rate_limit_per_minute=600))

    def reader(self, site: Site, analysis_id: str, token: str | None, address: str) -> str:
        """Who votes, as a keyed hash: the reader token the widget keeps, or without one the client's address,
        with the site and the analysis, so neither is stored and one reader's votes on two posts cannot be
        linked (the key is this database's own secret: an address cannot be found by trying them all)."""
        who = f"token:{token}" if token else f"address:{address}"
        message = "\x00".join((site.key, analysis_id, who)).encode()
        return hmac.new(self._reader_key(), message, hashlib.sha256).hexdigest()

    def _reader_key(self) -> bytes:
        if self._key is None:
            with Session(self.store.engine) as session:
                stored = session.get(ServerSecret, "reader")
            if stored is None:
                # another worker making it at the same moment wins: theirs is read back
                with contextlib.suppress(IntegrityError), Session(self.store.engine) as session:
                    session.add(ServerSecret(name="reader", value=secrets.token_hex(32)))
                    session.commit()
                with Session(self.store.engine) as session:
                    stored = session.get(ServerSecret, "reader")
            if stored is None:
                raise RuntimeError("the reader key could be neither stored nor read")
            self._key = bytes.fromhex(stored.value)
        return self._key

    def add_feedback(self, feedback: Feedback) -> tuple[Feedback, bool]:
        """(the stored vote, whether it is new). A reader's repeat vote on the same analysis replaces the
        earlier one, which stays counted once; two identical votes at the same moment end the same way."""
        try:
            with Session(self.store.engine, expire_on_commit=False) as session:
                session.add(feedback)
                session.commit()
            return feedback, True
        except IntegrityError:
            if feedback.reader is None:
                raise
        with Session(self.store.engine, expire_on_commit=False) as session:
            query = select(Feedback).where(
                Feedback.site_key == feedback.site_key,
                Feedback.analysis_id == feedback.analysis_id,
                Feedback.reader == feedback.reader,
            )
            earlier = session.exec(query).one()
            earlier.helpful, earlier.comment, earlier.post_id = feedback.helpful, feedback.comment, feedback.post_id
            earlier.created_at = feedback.created_at
            session.add(earlier)
            session.commit()
        return earlier, False

    def feedback(self, key: str, limit: int = 500) -> list[Feedback]:
        with Session(self.store.engine) as session:
            query = select(Feedback).where(Feedback.site_key == key).order_by(col(Feedback.id).desc()).limit(limit)
            return list(session.exec(query))

    # -- per request ----------------------------------------------------------------------
    def check_origin(self, site: Site, origin: str | None, own_origin: str, required: bool = False) -> None:
        """Pages of the site's allowed origins and this server's own pages are allowed. A request without Origin
        (a server, curl) is allowed only where `required` is False: the reads of an analysis the site's check
        handed out, which browsers make without Origin on a page's own server. Whatever spends the site's quota
        and model calls, or is stored (checks, feedback), needs an allowed Origin."""
        if origin is not None and (origin == own_origin or origin in origins_of(site)):
            return
        if origin is None and not required:
            return
        allowed = ", ".join(origins_of(site)) or "none yet (unerase site update KEY --origin ...)"
        if origin is None:
            raise OriginRequired(
                f"this request has no Origin header; the widget API answers it only from the site's pages, "
                f"whose browsers send their origin. Origins allowed for site '{site.key}': {allowed}"
            )
        raise Forbidden(f"the origin {origin} is not allowed for site '{site.key}'; allowed: {allowed}")

    async def limit(self, site: Site, client: str) -> None:
        """The site's limit per client (429 beyond it), counted where every process sees it."""
        limiter = self._limiters.get(site.key)
        if limiter is None:
            limiter = RateLimiter(site.rate_limit_per_minute, self.buckets, scope=f"site\x00{site.key}")
            self._limiters[site.key] = limiter
        await limiter.check(client)


def parse_list(values: Sequence[str] | None) -> list[str]:
    """Repeated or comma-separated command-line / form values as one clean list."""
    items: list[str] = []
    for value in values or ():
        items += [part.strip() for part in value.split(",") if part.strip()]
    return items
