"""Starting the web server: one process (`make serve`, the default) or several uvicorn workers on one machine, and
where a database can be shared (docs/deploy.md).

Several processes coordinate through the database (web/runs.py, web/batch_worker.py), never through memory:
- PostgreSQL: any number of processes on any number of machines.
- SQLite: processes on *one* machine (WAL mode; the file's locks work between local processes). It is refused on
  a network filesystem, whose locking SQLite cannot rely on: two machines writing one file corrupt it. Several
  workers on one SQLite file also write one after another, so `workers > 1` on SQLite is allowed with a warning.

Uvicorn's own supervisor runs the workers (`workers=N`): it is part of the server the app already uses, restarts a
worker that dies, and needs no other package; gunicorn would add a second process manager for the same job.
"""

from __future__ import annotations

import logging
from pathlib import Path

import uvicorn
from sqlalchemy.engine import make_url

from engine.errors import UneraseError
from web.app import create_app
from web.settings import Settings

log = logging.getLogger("unerase.serving")

# filesystems whose file locks SQLite cannot trust (sqlite.org: "SQLite Over a Network")
NETWORK_FILESYSTEMS = frozenset(
    {"nfs", "nfs4", "cifs", "smbfs", "smb3", "9p", "afs", "ceph", "glusterfs", "lustre", "fuse.sshfs", "davfs"}
)
MOUNTS = Path("/proc/mounts")


class UnsafeDatabase(UneraseError):
    code = "unsafe-database"


def filesystem_of(path: Path, mounts: str) -> str | None:
    """The type of the filesystem `path` is on, by the longest mount point above it in a /proc/mounts text."""
    resolved = str(path.resolve())
    best, kind = "", None
    for line in mounts.splitlines():
        fields = line.split()
        if len(fields) < 3:
            continue
        point = fields[1].replace("\\040", " ")
        inside = resolved == point or resolved.startswith(point.rstrip("/") + "/")
        if inside and len(point) > len(best):
            best, kind = point, fields[2]
    return kind


def check_database(settings: Settings, mounts: str | None = None) -> None:
    """Refuses a SQLite file on a network filesystem; warns when several workers share one SQLite file."""
    url = make_url(settings.resolved_database_url)
    if url.get_backend_name() != "sqlite" or not url.database or url.database == ":memory:":
        return
    if mounts is None:
        mounts = MOUNTS.read_text(encoding="utf-8") if MOUNTS.exists() else ""
    kind = filesystem_of(Path(url.database).parent, mounts)
    if kind in NETWORK_FILESYSTEMS:
        raise UnsafeDatabase(
            f"the SQLite database {url.database} is on a network filesystem ({kind}), where its locks do not "
            "hold and processes on different machines would corrupt it; keep SQLite on a local disk of one machine, "
            "or set UNERASE_DATABASE_URL to a PostgreSQL database (postgresql+psycopg://user:password@host/name)"
        )
    if settings.workers > 1:
        log.warning(
            "%d workers share the SQLite file %s: this works on one machine, with writes taking turns; "
            "use PostgreSQL (UNERASE_DATABASE_URL) for more processes or several machines",
            settings.workers,
            url.database,
        )


def serve(settings: Settings) -> None:
    """Serves HTTP until stopped: the app in this process, or `settings.workers` uvicorn worker processes, each
    building the app from the same settings (environment, .env, the TOML file)."""
    check_database(settings)
    if settings.workers == 1:
        uvicorn.run(create_app(settings), host=settings.host, port=settings.port)
        return
    uvicorn.run("web.app:create_app", factory=True, host=settings.host, port=settings.port, workers=settings.workers)
