"""Use versus mention in the web app: the demo page's result, and a site table from before `show_undecided`."""

from __future__ import annotations

import json
from pathlib import Path

from sqlalchemy import create_engine, text

from web.db import make_engine
from web.models import Site
from web.sites import Sites, site_to_dict
from web.store import Store

from .webapp import client

QUOTED = 'My brother was called a "junkie" for years; please stop using that word.'


def test_the_demo_result_says_a_quoted_word_is_no_attack(tmp_path: Path) -> None:
    with client(tmp_path) as web:
        response = web.post("/", data={"text": QUOTED, "lang": "en"}, follow_redirects=False)
        assert response.status_code == 303
        page = web.get(response.headers["location"]).text
    assert "Decision: not flagged" in page
    assert "offensive here · quoted, not an attack" in page  # the term's badge
    assert "<strong>Use:</strong> quoted (<bdi>quotation marks</bdi>) — explained, not held against the author." in page
    assert "“junkie” is quoted (quotation marks): explained, not held against the author" in page  # a reason


def test_a_site_table_from_before_gets_the_column_and_its_sites_show_nothing_on_undecided_posts(
    tmp_path: Path,
) -> None:
    url = f"sqlite:///{tmp_path / 'old.db'}"
    old = create_engine(url)
    with old.begin() as connection:  # the site table as it was before show_undecided existed
        connection.execute(
            text(
                "CREATE TABLE site (key VARCHAR(40) PRIMARY KEY, name VARCHAR NOT NULL, allowed_origins VARCHAR, "
                "languages VARCHAR, mode VARCHAR(16), threshold FLOAT, store BOOLEAN, show_checked BOOLEAN, "
                "rate_limit_per_minute INTEGER, created_at DATETIME, value_tp FLOAT, value_tn FLOAT, "
                "value_fp FLOAT, value_fn FLOAT, value_r FLOAT, calibration VARCHAR)"
            )
        )
        connection.execute(
            text(
                "INSERT INTO site VALUES ('s_old', 'Old forum', '[]', '[]', 'fast', 0.5, 1, 0, 120, NULL, "
                "1.0, 1.0, -4.0, -2.0, -0.5, '')"
            )
        )
    old.dispose()
    sites = Sites(Store(make_engine(url)))
    site = sites.get("s_old")
    assert isinstance(site, Site) and site.show_undecided == "nothing"
    assert json.loads(json.dumps(site_to_dict(site)))["show_undecided"] == "nothing"
