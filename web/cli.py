"""The `unerase` program: the engine's commands plus those that need the web app's database.

unerase site add --name NAME [--origin URL ...] [--lang xx ...] [--mode fast|thorough] [--threshold T]
                 [--no-store] [--show-checked] [--show-undecided nothing|about|review] [--rate-limit N] [--json]
unerase site list [--json]
unerase site update KEY [the same options; --store / --no-store, --show-checked / --hide-checked] [--json]

`site add` and `site update` print a summary for a person (the key and the embed snippet on lines of their
own), or with --json one JSON object and nothing else, for scripts.
unerase user create NAME [--role moderator|admin] [--password-stdin]
unerase user passwd NAME [--password-stdin]
unerase user disable NAME
unerase user enable NAME
unerase user list [--json]
unerase precedents import FILE --site KEY [--vocab PATH] --text-column C --term-column C --verdict-column C
                          [--lang-column C] [--lang xx] [--moderator NAME] [--json]
unerase analyze ... --site KEY / unerase detect ... --site KEY: with that site's term rules (and, for analyze,
                          its moderators' precedents and the labelled examples), as the web app does for the site
unerase worker            batch jobs and detached analyses without serving HTTP, until SIGTERM/SIGINT
unerase serve [--host H] [--port P] [--workers N]
                          the web app, in N uvicorn worker processes sharing the database (docs/deploy.md)
"""

from __future__ import annotations

import argparse
import getpass
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sqlmodel import Session

from engine.cli import build_parser
from engine.cli import main as engine_main
from engine.errors import UneraseError
from web.auth import Accounts, normalise_username
from web.db import make_engine
from web.models import Site
from web.settings import get_settings
from web.sites import (
    UNDECIDED_DISPLAYS,
    Sites,
    new_key,
    normalise_origin,
    parse_list,
    site_to_dict,
    undecided_display,
)
from web.store import Store


def _sites() -> Sites:
    return Sites(Store(make_engine(get_settings().resolved_database_url)))


def _accounts() -> Accounts:
    return Accounts(make_engine(get_settings().resolved_database_url))


def _apply(site: Site, args: argparse.Namespace) -> Site:
    if args.name is not None:
        site.name = args.name
    if args.origin is not None:
        site.allowed_origins = json.dumps([normalise_origin(o) for o in parse_list(args.origin)])
    if args.lang is not None:
        site.languages = json.dumps(parse_list(args.lang))
    if args.mode is not None:
        site.mode = args.mode
    if args.threshold is not None:
        if not 0.0 <= args.threshold <= 1.0:
            raise UneraseError(f"--threshold {args.threshold} is outside 0..1")
        site.threshold = args.threshold
    if args.store is not None:
        site.store = args.store
    if args.show_checked is not None:
        site.show_checked = args.show_checked
    if args.show_undecided is not None:
        site.show_undecided = undecided_display(args.show_undecided)
    if args.rate_limit is not None:
        site.rate_limit_per_minute = args.rate_limit
    return site


EMBED_HOST = "https://YOUR-UNERASE-HOST"


def embed_snippet(key: str, host: str = EMBED_HOST) -> str:
    return f'<script src="{host}/widget.js" data-site="{key}" async></script>'


def _print(site: Site) -> None:
    data: dict[str, Any] = site_to_dict(site)
    print(json.dumps(data, ensure_ascii=False))


UNDECIDED_WORDS = {
    "nothing": "readers see nothing (moderators see them in the queue)",
    "about": "readers see “About these words”",
    "review": "readers see “Under review”",
}


def _summary(site: Site, done: str) -> None:
    """The site as a person reads it: what was done, the settings, then the snippet on a line of its own."""
    data = site_to_dict(site)
    rows = [
        ("key", site.key),
        ("origins", ", ".join(data["allowed_origins"]) or "none (only this server's own pages)"),
        ("languages", ", ".join(data["languages"]) or "all loaded"),
        ("mode", site.mode),
        ("threshold", f"{site.threshold:g}"),
        ("store texts", "yes" if site.store else "no (kept in memory only)"),
        ("checked mark", "shown" if site.show_checked else "not shown"),
        ("undecided", UNDECIDED_WORDS.get(site.show_undecided, site.show_undecided)),
        ("rate limit", f"{site.rate_limit_per_minute} requests per minute per reader"),
    ]
    print(f"{done} “{site.name}”.")
    for name, value in rows:
        print(f"  {name + ':':<14}{value}")
    print("Embed the widget with this line in the forum's pages (replace the host with this server's address):")
    print(f"  {embed_snippet(site.key)}")
    print("(--json prints the site as JSON instead.)")


def _report(site: Site, args: argparse.Namespace, done: str) -> None:
    if args.json:
        _print(site)
    else:
        _summary(site, done)


def cmd_site_add(args: argparse.Namespace) -> int:
    if not args.name:
        raise UneraseError("a site needs a name: --name NAME")
    site = _sites().save(_apply(Site(key=new_key(), name=args.name), args))
    _report(site, args, "Added the site")
    return 0


def cmd_site_list(args: argparse.Namespace) -> int:
    for site in _sites().all():
        if args.json:
            _print(site)
        else:
            origins = ", ".join(site_to_dict(site)["allowed_origins"]) or "(this server only)"
            print(f"{site.key}\t{site.name}\t{site.mode}\tτ={site.threshold}\t{origins}")
    return 0


def cmd_site_update(args: argparse.Namespace) -> int:
    sites = _sites()
    with Session(sites.store.engine, expire_on_commit=False) as session:
        site = session.get(Site, args.key)
    if site is None:
        raise UneraseError(f"no site has the key '{args.key}'; `unerase site list` shows them")
    _report(sites.save(_apply(site, args)), args, "Updated the site")
    return 0


def _read_password(args: argparse.Namespace) -> str:
    if args.password_stdin:
        return sys.stdin.readline().rstrip("\r\n")
    password = getpass.getpass(f"password for {args.name}: ")
    if getpass.getpass("the same again: ") != password:
        raise UneraseError("the two passwords differ; nothing was changed")
    return password


def cmd_user_create(args: argparse.Namespace) -> int:
    accounts = _accounts()
    name = normalise_username(args.name)  # refuse a bad or taken name before asking for a password
    if accounts.get(name) is not None:
        raise UneraseError(f"a user named '{name}' already exists; `unerase user passwd {name}` changes the password")
    user = accounts.create(name, _read_password(args), args.role)
    print(f"created {user.role} '{user.username}'")
    return 0


def cmd_user_passwd(args: argparse.Namespace) -> int:
    accounts = _accounts()
    if accounts.get(args.name) is None:  # before asking for a password that would be thrown away
        raise UneraseError(f"no user is named '{args.name}'; `unerase user list` shows them")
    user = accounts.set_password(args.name, _read_password(args))
    print(f"changed the password of '{user.username}'; their sessions were ended")
    return 0


def cmd_user_disable(args: argparse.Namespace) -> int:
    user = _accounts().disable(args.name)
    print(f"disabled '{user.username}'; their sessions were ended")
    return 0


def cmd_user_enable(args: argparse.Namespace) -> int:
    user = _accounts().enable(args.name)
    print(f"enabled '{user.username}'; they can log in again with their password")
    return 0


def cmd_user_list(args: argparse.Namespace) -> int:
    for user in _accounts().all():
        state = "disabled" if user.disabled else "active"
        if args.json:
            print(json.dumps({"username": user.username, "role": user.role, "disabled": user.disabled}))
        else:
            print(f"{user.username}\t{user.role}\t{state}")
    return 0


def _add_user_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    user = commands.add_parser("user", help="moderator and admin accounts for the review and admin pages")
    usub = user.add_subparsers(dest="user_command", required=True)
    stdin_help = "read the password from the first line of standard input instead of asking"
    create = usub.add_parser("create", help="add an account; asks for its password")
    create.add_argument("name")
    create.add_argument("--role", choices=["moderator", "admin"], default="moderator")
    create.add_argument("--password-stdin", action="store_true", help=stdin_help)
    create.set_defaults(func=cmd_user_create)
    passwd = usub.add_parser("passwd", help="set a new password (ends the user's sessions)")
    passwd.add_argument("name")
    passwd.add_argument("--password-stdin", action="store_true", help=stdin_help)
    passwd.set_defaults(func=cmd_user_passwd)
    disable = usub.add_parser("disable", help="refuse the account's logins and end its sessions")
    disable.add_argument("name")
    disable.set_defaults(func=cmd_user_disable)
    enable = usub.add_parser("enable", help="let a disabled account log in again")
    enable.add_argument("name")
    enable.set_defaults(func=cmd_user_enable)
    listing = usub.add_parser("list", help="the accounts")
    listing.add_argument("--json", action="store_true")
    listing.set_defaults(func=cmd_user_list)


def _site_options(parser: argparse.ArgumentParser, adding: bool) -> None:
    parser.add_argument("--name", required=adding)
    parser.add_argument("--origin", action="append", help="allowed origin, e.g. https://forum.example (repeatable)")
    parser.add_argument("--lang", action="append", help="language the site uses (repeatable; default: all)")
    parser.add_argument("--mode", choices=["fast", "thorough"])
    parser.add_argument("--threshold", type=float, help="confidence below which a flag becomes needs_review")
    parser.add_argument("--store", dest="store", action="store_true", default=None, help="store texts and results")
    parser.add_argument("--no-store", dest="store", action="store_false", help="keep texts and results in memory only")
    parser.add_argument("--show-checked", dest="show_checked", action="store_true", default=None)
    parser.add_argument("--hide-checked", dest="show_checked", action="store_false")
    parser.add_argument(
        "--show-undecided",
        choices=UNDECIDED_DISPLAYS,
        help="what readers see on a post nothing could decide: nothing (default), about (a neutral "
        '"About these words") or review ("Under review"); moderators always see it in the queue',
    )
    parser.add_argument("--rate-limit", type=int, help="requests per minute per reader")
    parser.add_argument("--json", action="store_true", help="print the site as one JSON object (for scripts)")


def _site(key: str) -> tuple[Sites, Site]:
    sites = _sites()
    site = sites.get(key)
    if site is None:
        raise UneraseError(f"no site has the key '{key}'; `unerase site list` shows them")
    return sites, site


def cmd_precedents_import(args: argparse.Namespace) -> int:
    from engine.cli.common import vocabulary
    from engine.detector import Detector
    from web.precedents_import import Columns, import_precedents

    sites, site = _site(args.site)
    detector = Detector(vocabulary(args.vocab))
    columns = Columns(args.text_column, args.term_column, args.verdict_column, args.lang_column)
    report = import_precedents(
        sites.store.engine,
        detector,
        site.key,
        Path(args.file),
        columns,
        scope=sites.scope(site.key),
        language=args.lang,
        moderator=args.moderator,
    )
    if args.json:
        print(json.dumps(report.to_dict(), ensure_ascii=False))
    else:
        print(
            f"{report.rows} rows read: {report.used} used ({report.precedents} precedents for site {site.key}), "
            f"{len(report.refused)} refused"
        )
        for refusal in report.refused:
            print(f"  line {refusal.line}: {refusal.reason}")
    return 0 if not report.refused else 3


def _with_site(command: Any, analyze: bool) -> Any:
    """`detect` / `analyze` with `--site KEY`: the site's term rules, and for analyze its decision threshold,
    mode, moderators' precedents and the labelled examples, as the web app uses them for the site's posts."""

    def run(args: argparse.Namespace) -> int:
        if args.site is None:
            if analyze:
                args.mode = args.mode or "fast"
                args.threshold = 0.5 if args.threshold is None else args.threshold
            return int(command(args))
        sites, site = _site(args.site)
        scope = sites.scope(site.key)
        if not analyze:
            return int(command(args, scope))
        from engine.pipeline import SiteSources
        from web.precedents import DatabaseExamples, DatabasePrecedents

        args.mode = args.mode or site.mode
        args.threshold = site.threshold if args.threshold is None else args.threshold
        # the server's sources, unless turned off here too
        settings = get_settings()
        args.no_examples = args.no_examples or not settings.examples_enabled
        args.no_learned_uses = args.no_learned_uses or not settings.learned_uses_enabled
        if args.examples_min_confidence is None:
            args.examples_min_confidence = settings.examples_min_confidence
        database = sites.store.engine
        return int(command(args, scope, SiteSources(DatabasePrecedents(database), DatabaseExamples(database))))

    return run


def _add_site_option(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    for name in ("detect", "analyze"):
        parser = commands.choices[name]
        parser.add_argument(
            "--site",
            help="a registered site's key: its term rules" + (", precedents and threshold" * (name == "analyze")),
        )
        command = parser.get_default("func")
        if name == "analyze":
            # a site's own mode and threshold apply unless given here
            parser.set_defaults(mode=None, threshold=None)
        parser.set_defaults(func=_with_site(command, name == "analyze"))


def _add_precedent_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    group = commands.add_parser("precedents", help="moderators' earlier verdicts that decide later ambiguous hits")
    psub = group.add_subparsers(dest="precedents_command", required=True)
    imp = psub.add_parser(
        "import",
        help="load a site's past moderation decisions (CSV with a header line, or JSONL) as its precedents",
    )
    imp.add_argument("file", help="a .csv or .jsonl file, one decision per row")
    imp.add_argument("--site", required=True, help="the site's key (`unerase site list`)")
    imp.add_argument("--vocab", action="append", help="vocabulary file or folder (repeatable); default: shipped")
    imp.add_argument("--text-column", required=True, help="the column with the moderated text")
    imp.add_argument("--term-column", required=True, help="the column with the term as written in the text")
    imp.add_argument("--verdict-column", required=True, help="the column with the verdict: contentious or neutral")
    imp.add_argument("--lang-column", help="the column with the text's language (default: detected)")
    imp.add_argument("--lang", help="the language of every text without one (default: detected)")
    imp.add_argument("--moderator", default="import", help="recorded as who decided (default: import)")
    imp.add_argument("--json", action="store_true", help="print the report as JSON")
    imp.set_defaults(func=cmd_precedents_import)


def cmd_worker(args: argparse.Namespace) -> int:
    from web.serving import check_database
    from web.worker import main as run_worker  # loads the vocabularies and models: only for this command

    settings = get_settings()
    check_database(settings)
    return run_worker(settings)


def cmd_serve(args: argparse.Namespace) -> int:
    """The options become the settings' environment variables, so that every worker process reads the same."""
    from web.serving import serve  # imports the whole app: only for this command

    for option, variable in (("host", "UNERASE_HOST"), ("port", "UNERASE_PORT"), ("workers", "UNERASE_WORKERS")):
        value = getattr(args, option)
        if value is not None:
            os.environ[variable] = str(value)
    get_settings.cache_clear()
    serve(get_settings())
    return 0


def _positive(value: str) -> int:
    number = int(value)
    if number < 1:
        raise argparse.ArgumentTypeError(f"{value} is not a positive whole number")
    return number


def build_full_parser() -> argparse.ArgumentParser:
    parser = build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    site = commands.add_parser("site", help="register and configure the sites that embed the widget")
    ssub = site.add_subparsers(dest="site_command", required=True)
    add = ssub.add_parser("add", help="register a site; prints its key and embed snippet")
    _site_options(add, adding=True)
    add.set_defaults(func=cmd_site_add)
    listing = ssub.add_parser("list", help="the registered sites")
    listing.add_argument("--json", action="store_true")
    listing.set_defaults(func=cmd_site_list)
    update = ssub.add_parser("update", help="change a site's settings")
    update.add_argument("key")
    _site_options(update, adding=False)
    update.set_defaults(func=cmd_site_update)
    _add_user_commands(commands)
    about = (
        "run batch jobs without serving HTTP, sharing them with every other process on the same database "
        "(docs/deploy.md); stops on SIGTERM or SIGINT"
    )
    worker = commands.add_parser("worker", help=about, description=about)
    worker.set_defaults(func=cmd_worker)
    about = "serve the web app (and, unless run_jobs is false, its background work) until stopped"
    serving = commands.add_parser("serve", help=about, description=about)
    serving.add_argument("--host", help="address to bind (default: the host setting, 127.0.0.1)")
    serving.add_argument("--port", type=_positive, help="port (default: the port setting, 8000)")
    serving.add_argument(
        "--workers", type=_positive, help="web server processes sharing the database (default: the workers setting, 1)"
    )
    serving.set_defaults(func=cmd_serve)
    _add_evaluation_options(commands)
    _add_precedent_commands(commands)
    _add_site_option(commands)
    return parser


def cmd_eval_site(args: argparse.Namespace) -> int:
    """`unerase eval` with HTML reports, and with a registered site's term rules, mode and τ (`--site KEY`)."""
    from engine.cli.evaluate import cmd_eval
    from web.evaluation_report import render_eval_file

    scope = None
    if args.site:
        sites = _sites()
        site = sites.get(args.site)
        if site is None:
            raise UneraseError(f"no site has the key '{args.site}'; `unerase site list` shows them")
        scope = sites.scope(args.site)
        args.mode, args.threshold = site.mode, site.threshold
    return cmd_eval(args, report_writer=render_eval_file, scope=scope)


def _add_evaluation_options(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """`eval --report` and `audit --report` render HTML with the web layer's templates and charts; `eval --site`
    reads a site's settings from the database."""
    from functools import partial

    from engine.cli.audit import cmd_audit
    from web.evaluation_report import render_audit_file

    evaluation = commands.choices["eval"]
    evaluation.add_argument("--site", help="apply this registered site's term rules, mode and threshold")
    evaluation.set_defaults(func=cmd_eval_site)
    commands.choices["audit"].set_defaults(func=partial(cmd_audit, report_writer=render_audit_file))


def main(argv: Sequence[str] | None = None) -> int:
    return engine_main(argv, build_full_parser())


if __name__ == "__main__":
    sys.exit(main())
