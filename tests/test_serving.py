"""Starting the server (web/serving.py): `unerase serve --workers N` runs N uvicorn workers on one database, and
a SQLite file on a network filesystem is refused before anything starts."""

from __future__ import annotations

import logging
import time
from pathlib import Path

import pytest

from web.serving import UnsafeDatabase, check_database, filesystem_of
from web.settings import Settings

from .postgres import database_url_or_skip, fresh_schema_url
from .support.app_process import STARTUP_SECONDS, free_port, start_process

MOUNTS = """\
/dev/vda / ext4 rw,relatime 0 0
tmpfs /tmp tmpfs rw 0 0
fileserver:/export/unerase /srv/shared nfs4 rw,relatime 0 0
//nas/archive /mnt/my\\040archive cifs rw 0 0
"""


def test_the_filesystem_of_a_path_is_that_of_its_longest_mount_point() -> None:
    assert filesystem_of(Path("/srv/shared/data"), MOUNTS) == "nfs4"
    assert filesystem_of(Path("/srv/sharedness"), MOUNTS) == "ext4"  # a prefix of the name is not the mount
    assert filesystem_of(Path("/mnt/my archive/db"), MOUNTS) == "cifs"
    assert filesystem_of(Path("/tmp/x"), MOUNTS) == "tmpfs"


def test_sqlite_on_a_network_filesystem_is_refused_with_what_to_do_instead(tmp_path: Path) -> None:
    settings = Settings(database_url="sqlite:////srv/shared/data/unerase.db", data_dir=tmp_path)
    with pytest.raises(UnsafeDatabase) as refused:
        check_database(settings, MOUNTS)
    message = refused.value.message
    assert "network filesystem (nfs4)" in message and "postgresql+psycopg://" in message
    check_database(Settings(database_url="sqlite:////var/lib/unerase/unerase.db", data_dir=tmp_path), MOUNTS)
    check_database(Settings(database_url="postgresql+psycopg://u:p@db/unerase", data_dir=tmp_path), MOUNTS)


def test_several_workers_on_one_sqlite_file_are_allowed_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="unerase.serving"):
        check_database(Settings(data_dir=tmp_path, workers=2), MOUNTS)
    assert "one machine" in caplog.text and "PostgreSQL" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="unerase.serving"):
        check_database(Settings(data_dir=tmp_path, workers=1), MOUNTS)
    assert caplog.text == ""


@pytest.mark.postgres
def test_unerase_serve_starts_the_workers_asked_for(tmp_path: Path) -> None:
    with fresh_schema_url(database_url_or_skip()) as schema:
        port = free_port()
        server = start_process(
            "served",
            tmp_path,
            {"UNERASE_DATABASE_URL": schema.url, "UNERASE_EXAMPLES_ENABLED": "false"},
            arguments=("-m", "web.cli", "serve", "--workers", "2", "--port", str(port)),
            serves_http=False,
        )
        try:
            server.url = f"http://127.0.0.1:{port}"
            deadline = time.monotonic() + STARTUP_SECONDS
            nodes: set[str] = set()
            with server.client(timeout=5) as client:
                while time.monotonic() < deadline and len(nodes) < 2:  # bounded
                    if not server.alive():
                        raise AssertionError(server.output())
                    try:
                        answer = client.get("/readyz", headers={"Connection": "close"})
                    except Exception:  # not listening yet
                        time.sleep(0.2)
                        continue
                    if answer.status_code == 200:
                        nodes.add(answer.json()["node"])
            assert len(nodes) == 2, server.output()  # two processes answered, each with its own id
            assert server.output().count("Started server process") == 2
        finally:
            server.stop()
