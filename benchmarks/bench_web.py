"""Benchmark of the web service in vocabulary-only mode: streaming latency, API throughput, batches.

    python benchmarks/bench_web.py [--quick] [--only latency,throughput,widget,batch]

1. Latency: POST /api/v1/analyses with `Accept: text/event-stream` on texts of about 2,000
   characters, one request at a time, through the ASGI app in this process (its lifespan runs
   first). Times from sending the request to the first `event: hit` line and to `event: done`.
   httpx's ASGITransport hands over the body only once the response is complete, so the request
   is driven by a small ASGI caller here that timestamps every body chunk as the app sends it.
2. Throughput: the JSON API (no streaming) behind real uvicorn on 127.0.0.1 with 2 workers and
   with 1, side by side; load from 2 client processes (asyncio + httpx2) with many connections
   each, on texts of about 500 characters, half with hits. `--rate-limit N` turns the per-client
   limit on (a limit no request reaches, so every request is counted and none refused: the cost of
   counting; all load comes from one address, so every check updates the same bucket, the worst
   case), `--databases sqlite,postgresql` serves each configuration from SQLite and from a
   throwaway schema of the PostgreSQL server named by UNERASE_TEST_DATABASE_URL.
3. Batch: a CSV of 500-character texts uploaded to the uvicorn server; time until the job is
   complete, rows per second, peak resident memory of the server's workers, and the time to
   download the results as JSONL.

Every measurement gets a fresh temporary data directory and lemma cache; the shipped
vocabularies are used. Results are printed and written to benchmarks/results/web-<date>.json
(not committed). Timings are not asserted: this is a measurement, not a test.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import multiprocessing
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

# The web app, the engine and the corpus helpers are imported inside the functions that use
# them: client processes start with `spawn` and import this module, and need none of them.

CLIENT_PROCESSES = 2
SERVER_START_SECONDS = 180.0


def percentiles(values: list[float]) -> dict[str, float]:
    """p50/p95/p99 and mean of durations in seconds, returned in milliseconds."""
    if not values:
        return {"p50": float("nan"), "p95": float("nan"), "p99": float("nan"), "mean": float("nan")}
    cuts = statistics.quantiles(values, n=100, method="inclusive") if len(values) > 1 else [values[0]] * 99
    return {
        "p50": cuts[49] * 1000,
        "p95": cuts[94] * 1000,
        "p99": cuts[98] * 1000,
        "mean": statistics.fmean(values) * 1000,
    }


# -- 1. latency of the first hit, in process ----------------------------------------------------
@dataclass(frozen=True)
class StreamTiming:
    status: int
    first_event: float | None  # seconds from the request to the first event line (`analysis`)
    first_hit: float | None  # seconds from the request to the first `event: hit` line
    done: float | None  # ... to the `event: done` line
    hits: int


async def post_stream(app: Any, body: bytes) -> StreamTiming:
    """POST /api/v1/analyses as an SSE request, straight into the ASGI app, timing each event line."""
    headers = [
        (b"host", b"bench.local"),
        (b"content-type", b"application/json"),
        (b"accept", b"text/event-stream"),
        (b"content-length", str(len(body)).encode()),
    ]
    scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST", "scheme": "http",
        "path": "/api/v1/analyses", "raw_path": b"/api/v1/analyses", "query_string": b"", "root_path": "",
        "headers": headers, "client": ("127.0.0.1", 50000), "server": ("bench.local", 80), "state": {},
    }  # fmt: skip
    finished = asyncio.Event()
    body_sent = False
    status = 0
    first_event: float | None = None
    first_hit: float | None = None
    done: float | None = None
    hits = 0
    pending = b""

    async def receive() -> dict[str, Any]:
        nonlocal body_sent
        if not body_sent:
            body_sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        await finished.wait()  # like a client that stays connected until the response ends
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        nonlocal status, first_event, first_hit, done, hits, pending
        elapsed = time.perf_counter() - started
        if message["type"] == "http.response.start":
            status = message["status"]
            return
        pending += message.get("body", b"")
        *lines, pending = pending.split(b"\n")
        for line in lines:
            name = line.rstrip(b"\r")
            if name.startswith(b"event: ") and first_event is None:
                first_event = elapsed
            if name == b"event: hit":
                hits += 1
                first_hit = elapsed if first_hit is None else first_hit
            elif name == b"event: done":
                done = elapsed
        if not message.get("more_body", False):
            finished.set()

    started = time.perf_counter()
    await app(scope, receive, send)
    return StreamTiming(status, first_event, first_hit, done, hits)


async def latency(requests: int, warmup: int, chars: int) -> dict[str, Any]:
    from benchmarks.corpus_web import texts_with_hits
    from web.app import create_app
    from web.settings import Settings

    texts = texts_with_hits(requests + warmup, chars, seed=20261125)
    bodies = [json.dumps({"text": t, "lang": "en"}).encode() for t in texts]
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(data_dir=Path(tmp) / "data", cache_dir=Path(tmp) / "cache", rate_limit_per_minute=0,
                            llm_backend="none", llm_languages={})  # fmt: skip
        app = create_app(settings)
        async with app.router.lifespan_context(app):
            timings = [await post_stream(app, body) for body in bodies]
    measured = timings[warmup:]
    failed = [t for t in measured if t.status != 200 or t.first_hit is None or t.done is None]
    return {
        "requests": len(measured),
        "warmup": warmup,
        "text_chars": statistics.fmean(len(t) for t in texts[warmup:]),
        "hits_per_text": statistics.fmean(t.hits for t in measured),
        "errors": len(failed),
        "first_event_ms": percentiles([t.first_event for t in measured if t.first_event is not None]),
        "first_hit_ms": percentiles([t.first_hit for t in measured if t.first_hit is not None]),
        "done_ms": percentiles([t.done for t in measured if t.done is not None]),
    }


# -- the uvicorn server ------------------------------------------------------------------------
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def proc_fields(pid: int) -> list[str]:
    """/proc/PID/stat split after the command name (which may hold spaces); [0] is the state."""
    raw = Path(f"/proc/{pid}/stat").read_text()
    return raw[raw.rindex(")") + 2 :].split()


@dataclass(frozen=True)
class Server:
    process: subprocess.Popen[bytes]
    base_url: str
    workers: int
    log: Path

    def worker_pids(self) -> list[int]:
        """The processes that serve requests: the workers uvicorn spawned, or uvicorn itself with one worker."""
        if self.workers == 1:
            return [self.process.pid]
        pids = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                if int(proc_fields(int(entry.name))[1]) != self.process.pid:
                    continue
                command = (entry / "cmdline").read_bytes()
            except (OSError, ValueError):
                continue  # the process ended while we looked
            if b"resource_tracker" not in command:
                pids.append(int(entry.name))
        return sorted(pids)

    def cpu_seconds(self) -> float:
        """User + system CPU time used so far by the worker processes."""
        ticks = os.sysconf("SC_CLK_TCK")
        return sum(int(f[11]) + int(f[12]) for f in map(proc_fields, self.worker_pids())) / ticks

    def rss_mb(self) -> list[float]:
        """VmRSS (resident memory now) in MB, per worker."""
        now = []
        for pid in self.worker_pids():
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    now.append(int(line.split()[1]) / 1024)
        return now

    def peak_rss_mb(self) -> list[float]:
        """VmHWM (the most resident memory each worker has had) in MB, per worker."""
        peaks = []
        for pid in self.worker_pids():
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    peaks.append(int(line.split()[1]) / 1024)
        return peaks


@contextmanager
def uvicorn_server(
    workers: int, tmp: Path, extra_env: dict[str, str] | None = None, app_root: Path = ROOT
) -> Iterator[Server]:
    """uvicorn with a fresh data directory, vocabulary-only, no rate limit; stopped whatever happens.
    `app_root` serves another checkout of the project (a baseline measured side by side with this one)."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("UNERASE_")}
    env.update({
        "UNERASE_DATA_DIR": str(tmp / "data"),
        "UNERASE_CACHE_DIR": str(tmp / "cache"),
        "UNERASE_RATE_LIMIT_PER_MINUTE": "0",
        "UNERASE_LLM_BACKEND": "none",
        "PYTHONPATH": str(app_root),
        **(extra_env or {}),
    })  # fmt: skip
    log = tmp / f"uvicorn-{workers}.log"
    command = [sys.executable, "-m", "uvicorn", "web.app:create_app", "--factory", "--host", "127.0.0.1",
               "--port", str(port), "--workers", str(workers), "--no-access-log", "--log-level", "info"]  # fmt: skip
    with log.open("wb") as log_file:
        # its own session, so the whole group (uvicorn and the workers it spawned) can be stopped together
        process = subprocess.Popen(command, cwd=tmp, env=env, stdout=log_file, stderr=subprocess.STDOUT,
                                   start_new_session=True)  # fmt: skip
    server = Server(process, f"http://127.0.0.1:{port}", workers, log)
    try:
        deadline = time.monotonic() + SERVER_START_SECONDS
        # every worker logs this once its lifespan (vocabularies, indexes, database) is done
        while log.read_text(errors="replace").count("Application startup complete.") < workers:
            if process.poll() is not None or time.monotonic() > deadline:
                output = log.read_text(errors="replace")[-3000:]
                raise SystemExit(f"uvicorn did not start ({workers} workers):\n{output}")
            time.sleep(0.2)
        yield server
    finally:
        stop(process)


def stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)
    with contextlib.suppress(ProcessLookupError):  # workers that outlived their supervisor
        os.killpg(process.pid, signal.SIGKILL)


# -- 2. throughput of the JSON API --------------------------------------------------------------
@dataclass(frozen=True)
class LoadPlan:
    base_url: str
    bodies: list[bytes]
    connections: int
    start_at: float  # time.time() when the measured window opens (after the warm-up)
    warmup: float
    seconds: float
    paths: tuple[str, ...] = ()  # GET these (round robin) instead of POSTing bodies to the analyses API
    expect: str = "201"


async def load(plan: LoadPlan, offset: int) -> dict[str, Any]:
    """Closed-loop load: each connection sends its next request as soon as the previous answer is read."""
    window_end = plan.start_at + plan.seconds
    latencies: list[float] = []
    statuses: dict[str, int] = {}
    cpu_at_start: list[float] = []
    limits = httpx2.Limits(max_connections=plan.connections, max_keepalive_connections=plan.connections)
    headers = {"content-type": "application/json"}

    async def connection(number: int) -> None:
        index = offset + number
        while (now := time.time()) < window_end:
            started = time.perf_counter()
            try:
                if plan.paths:
                    response = await client.get(plan.paths[index % len(plan.paths)])
                else:
                    body = plan.bodies[index % len(plan.bodies)]
                    response = await client.post("/api/v1/analyses", content=body, headers=headers)
                index += plan.connections * CLIENT_PROCESSES
                key = str(response.status_code)
            except httpx2.HTTPError as exc:
                key = type(exc).__name__
            elapsed = time.perf_counter() - started
            # only requests that started and ended inside the window count
            if now >= plan.start_at and time.time() <= window_end:
                statuses[key] = statuses.get(key, 0) + 1
                if key == plan.expect:
                    latencies.append(elapsed)

    async def cpu_mark() -> None:
        await asyncio.sleep(max(0.0, plan.start_at - time.time()))
        cpu_at_start.append(time.process_time())

    await asyncio.sleep(max(0.0, plan.start_at - plan.warmup - time.time()))
    async with httpx2.AsyncClient(base_url=plan.base_url, limits=limits, timeout=60) as client:
        await asyncio.gather(cpu_mark(), *(connection(n) for n in range(plan.connections)))
    return {"latencies": latencies, "statuses": statuses, "cpu": time.process_time() - cpu_at_start[0]}


def client_process(plan: LoadPlan, offset: int) -> dict[str, Any]:
    return asyncio.run(load(plan, offset))


def throughput(
    server: Server,
    bodies: list[bytes],
    connections: int,
    seconds: float,
    warmup: float,
    paths: tuple[str, ...] = (),
    expect: str = "201",
) -> dict[str, Any]:
    # spawn, not fork: the parent may hold threads (the in-process app's thread pool)
    context = multiprocessing.get_context("spawn")
    start = time.time() + 3.0 + warmup
    plan = LoadPlan(server.base_url, bodies, connections, start, warmup, seconds, paths, expect)
    with context.Pool(CLIENT_PROCESSES) as pool:
        pending = pool.starmap_async(client_process, [(plan, n * connections) for n in range(CLIENT_PROCESSES)])
        # the server's CPU time over the measured window only
        time.sleep(max(0.0, plan.start_at - time.time()))
        server_cpu = server.cpu_seconds()
        time.sleep(max(0.0, plan.start_at + seconds - time.time()))
        server_cpu = server.cpu_seconds() - server_cpu
        results = pending.get(timeout=seconds + warmup + 120)
    latencies = [x for r in results for x in r["latencies"]]
    statuses: dict[str, int] = {}
    for r in results:
        for key, count in r["statuses"].items():
            statuses[key] = statuses.get(key, 0) + count
    return {
        "workers": server.workers,
        "connections": connections * CLIENT_PROCESSES,
        "seconds": seconds,
        "requests": len(latencies),
        "requests_per_second": len(latencies) / seconds,
        "errors": sum(count for key, count in statuses.items() if key != expect),
        "statuses": statuses,
        "latency_ms": percentiles(latencies),
        "server_cpu_seconds": server_cpu,
        "client_cpu_seconds": sum(r["cpu"] for r in results),
    }


def wrk_throughput(
    server: Server, bodies: list[bytes], connections: int, seconds: float, paths: tuple[str, ...] = ()
) -> dict[str, Any] | None:
    """The same load from wrk (C, two threads), when it is installed: it needs far less CPU than the
    Python client, so on a 2-core machine more of the machine measures the server."""
    wrk = shutil.which("wrk")
    if wrk is None:
        return None
    items = paths or tuple(body.decode() for body in bodies[:500])
    # every request body / path as a Lua long string; wrk cycles through them
    entries = ",\n".join("[==[" + item + "]==]" for item in items)
    if paths:
        lua = f"local items = {{{entries}}}\nlocal i = 0\nrequest = function()\n  i = i % #items + 1\n" \
              "  return wrk.format('GET', items[i])\nend\n"  # fmt: skip
    else:
        lua = f"local items = {{{entries}}}\nlocal i = 0\nwrk.method = 'POST'\n" \
              "wrk.headers['Content-Type'] = 'application/json'\nrequest = function()\n  i = i % #items + 1\n" \
              "  return wrk.format('POST', '/api/v1/analyses', nil, items[i])\nend\n"  # fmt: skip
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as script:
        script.write(lua)
    warm = [wrk, "-t2", f"-c{connections}", "-d2s", "-s", script.name, server.base_url]
    subprocess.run(warm, capture_output=True, timeout=60, check=True)
    cpu_before = server.cpu_seconds()
    command = [wrk, "-t2", f"-c{connections}", f"-d{seconds:.0f}s", "--latency", "-s", script.name, server.base_url]
    out = subprocess.run(command, capture_output=True, text=True, timeout=seconds + 60, check=True).stdout
    server_cpu = server.cpu_seconds() - cpu_before
    os.unlink(script.name)

    def ms(value: str) -> float:  # wrk writes 850.00us, 12.34ms, 1.02s
        for unit, factor in (("us", 0.001), ("ms", 1.0), ("s", 1000.0)):
            if value.endswith(unit):
                return float(value[: -len(unit)]) * factor
        return float(value)

    percentiles_ms = {f"p{m[0]}": ms(m[1]) for m in re.findall(r"^\s+(50|99)%\s+(\S+)", out, re.M)}
    requests = int(re.search(r"(\d+) requests in", out).group(1))  # type: ignore[union-attr]
    rate = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))  # type: ignore[union-attr]
    bad = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    errors = int(bad.group(1)) if bad else 0
    socket_errors = re.search(r"Socket errors: (.*)", out)
    return {
        "tool": "wrk",
        "workers": server.workers,
        "connections": connections,
        "seconds": seconds,
        "requests": requests,
        "requests_per_second": rate,
        "errors": errors,
        "socket_errors": socket_errors.group(1) if socket_errors else "",
        "latency_ms": percentiles_ms,
        "server_cpu_seconds": server_cpu,
    }


# -- 3. the widget: a finished explanation fetched again and again --------------------------------------
def widget_fetch(server: Server, texts: list[str], connections: int, seconds: float) -> dict[str, Any]:
    """Registers a site, lets one batched check analyse 50 posts, then measures fetching their (cached)
    explanations the way open panels do; also the script's transfer size."""
    with httpx2.Client(base_url=server.base_url, timeout=60) as client:
        site = client.post("/api/v1/sites", json={"name": "bench", "rate_limit_per_minute": 0},
                           headers={"Authorization": "Bearer bench"}).json()["key"]  # fmt: skip
        posts = [{"id": f"p{n}", "text": text} for n, text in enumerate(texts)]
        # a check needs the Origin of a page allowed to use the site: this server's own, as on its demo forum
        origin = {"Origin": server.base_url.rstrip("/")}
        checked = client.post(f"/api/v1/widget/{site}/check", json={"lang": "en", "posts": posts}, headers=origin)
        checked = checked.json()
        ids = [r["analysis_id"] for r in checked["results"]]
        script = client.get("/widget.js", headers={"Accept-Encoding": "gzip"})
        transfer = int(script.headers.get("content-length", len(script.content)))
        plain = len(client.get("/widget.js", headers={"Accept-Encoding": "identity"}).content)
    paths = tuple(f"/api/v1/widget/{site}/analyses/{analysis_id}" for analysis_id in ids)
    run = throughput(server, [], connections, seconds, warmup=2.0, paths=paths, expect="200")
    return {**run, "wrk": wrk_throughput(server, [], 8, seconds, paths), "script_bytes": plain,
            "script_gzip_bytes": transfer}  # fmt: skip


# -- 4. a batch job -------------------------------------------------------------------------------
def batch(server: Server, upload: bytes, rows: int, timeout: float) -> dict[str, Any]:
    rss_before = server.peak_rss_mb()
    with httpx2.Client(base_url=server.base_url, timeout=600) as client:
        started = time.perf_counter()
        response = client.post(
            "/api/v1/batches",
            files={"file": ("bench.csv", upload, "text/csv")},
            data={"text_column": "text", "id_column": "id"},
        )
        accepted = time.perf_counter() - started
        if response.status_code != 202:
            raise SystemExit(f"the upload was refused ({response.status_code}): {response.text[:500]}")
        job = response.json()
        deadline = time.monotonic() + timeout
        # resident memory while the rows are processed (after the upload was parsed), by progress quarter:
        # flat when the largest worker's RSS does not grow from the first quarter to the last
        by_quarter: dict[int, float] = {}
        while True:
            status = client.get(job["links"]["self"]).json()
            quarter = min(3, status["percent"] // 25)
            by_quarter[quarter] = max(by_quarter.get(quarter, 0.0), max(server.rss_mb()))
            if status["status"] == "complete":
                break
            if time.monotonic() > deadline:
                raise SystemExit(f"the batch was not complete after {timeout:.0f} s: {status}")
            time.sleep(0.5)
        complete = time.perf_counter() - started
        started = time.perf_counter()
        lines = size = 0
        with client.stream("GET", job["links"]["results_jsonl"]) as download:
            for line in download.iter_lines():
                lines += bool(line.strip())
                size += len(line) + 1
        downloaded = time.perf_counter() - started
    if status["total"] != rows or lines != rows:
        raise SystemExit(f"expected {rows} rows; the job counted {status['total']} and the download had {lines}")
    return {
        "rows": rows,
        "upload_mb": len(upload) / 1e6,
        "upload_seconds": accepted,
        "complete_seconds": complete,
        "rows_per_second": rows / complete,
        "row_errors": status["errors"],
        "download_seconds": downloaded,
        "download_mb": size / 1e6,
        "peak_rss_mb_per_worker_at_start": rss_before,
        "peak_rss_mb_per_worker": server.peak_rss_mb(),
        "processing_rss_mb_by_quarter": [round(by_quarter[q]) for q in sorted(by_quarter)],
    }


# -- report ----------------------------------------------------------------------------------------
def print_report(results: dict[str, Any]) -> None:
    def row(label: str, value: str) -> None:
        print(f"  {label:<44} {value}")

    if lat := results.get("latency"):
        event, first, done = lat["first_event_ms"], lat["first_hit_ms"], lat["done_ms"]
        print(f"\nlatency, in process: {lat['requests']} SSE requests one at a time after {lat['warmup']} warm-up, "
              f"{lat['text_chars']:,.0f} characters, {lat['hits_per_text']:.1f} hits per text")  # fmt: skip
        row("", "     p50      p95      p99  (ms)")
        row("to the first event (`analysis`)", f"{event['p50']:8.1f} {event['p95']:8.1f} {event['p99']:8.1f}")
        row("to the first `event: hit`", f"{first['p50']:8.1f} {first['p95']:8.1f} {first['p99']:8.1f}")
        row("to `event: done`", f"{done['p50']:8.1f} {done['p95']:8.1f} {done['p99']:8.1f}")
        row("failed requests", str(lat["errors"]))
    if runs := results.get("throughput"):
        print_throughput(runs, row)
    if fetch := results.get("widget"):
        print(f"\nwidget: a finished explanation fetched by open panels, uvicorn {fetch['workers']} workers, "
              f"{fetch['connections']} connections, {fetch['seconds']:.0f} s")  # fmt: skip
        row("requests per second", f"{fetch['requests_per_second']:,.0f}")
        lat = fetch["latency_ms"]
        row("latency p50 / p99 (ms)", f"{lat['p50']:.1f} / {lat['p99']:.1f}")
        row("errors", str(fetch["errors"]))
        row("server CPU ms per request", f"{fetch['server_cpu_seconds'] * 1000 / max(fetch['requests'], 1):.2f}")
        if w := fetch.get("wrk"):
            row(f"wrk (C client, {w['connections']} connections): requests/s", f"{w['requests_per_second']:,.0f}")
            row(
                "wrk latency p50 / p99 (ms)",
                f"{w['latency_ms'].get('p50', 0):.1f} / {w['latency_ms'].get('p99', 0):.1f}",
            )
            row("wrk errors", str(w["errors"]))
        row("widget.js transfer (gzip) / plain bytes", f"{fetch['script_gzip_bytes']:,} / {fetch['script_bytes']:,}")
    if job := results.get("batch"):
        print(f"\nbatch: {job['rows']:,} rows, {job['upload_mb']:.1f} MB CSV, {job['workers']} uvicorn workers")
        row("upload accepted (202) after", f"{job['upload_seconds']:.1f} s")
        row("complete after (from the upload's start)", f"{job['complete_seconds']:.1f} s")
        row("rows per second", f"{job['rows_per_second']:,.0f}")
        row("row errors", str(job["row_errors"]))
        row("JSONL download", f"{job['download_seconds']:.1f} s ({job['download_mb']:.1f} MB)")
        peaks = ", ".join(f"{mb:.0f}" for mb in job["peak_rss_mb_per_worker"])
        start = ", ".join(f"{mb:.0f}" for mb in job["peak_rss_mb_per_worker_at_start"])
        row("peak RSS per worker (MB)", f"{peaks} (after startup: {start})")
        quarters = ", ".join(str(mb) for mb in job.get("processing_rss_mb_by_quarter", []))
        row("largest worker RSS while processing, by quarter (MB)", quarters)


def print_throughput(runs: list[dict[str, Any]], row: Any) -> None:
    """One column per checkout and worker count, each figure the median over the rounds."""
    groups: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for run in runs:
        database = {"sqlite": "", "postgresql": "pg "}[run.get("database", "sqlite")]
        groups.setdefault((database + run.get("checkout", "this"), run["workers"]), []).append(run)
    rounds = max(len(g) for g in groups.values())
    print(f"\nthroughput, JSON API behind uvicorn: {runs[0]['connections']} connections from {CLIENT_PROCESSES} "
          f"client processes, {runs[0]['seconds']:.0f} s per run, median of {rounds} round(s), "
          f"rate limit {runs[0].get('rate_limit', 0) or 'off'}")  # fmt: skip
    row("", "".join(f"{label[:11] + ' ' + str(workers) + 'w':>15}" for label, workers in groups))

    def median(get: Any) -> str:
        return "".join(f"{statistics.median(get(r) for r in g):>15,.1f}" for g in groups.values())

    row("requests per second", median(lambda r: r["requests_per_second"]))
    row("latency p50 (ms)", median(lambda r: r["latency_ms"]["p50"]))
    row("latency p99 (ms)", median(lambda r: r["latency_ms"]["p99"]))
    row("errors", median(lambda r: r["errors"]))
    # steadier than requests/s on a busy machine: other processes take wall time, not this
    row("server CPU ms per request", median(lambda r: r["server_cpu_seconds"] * 1000 / max(r["requests"], 1)))
    row("client CPU seconds in the window", median(lambda r: r["client_cpu_seconds"]))
    if all(r.get("wrk") for r in runs):
        row("wrk (32 connections): requests/s", median(lambda r: r["wrk"]["requests_per_second"]))
        row("wrk latency p50 (ms)", median(lambda r: r["wrk"]["latency_ms"].get("p50", 0)))
        row("wrk latency p99 (ms)", median(lambda r: r["wrk"]["latency_ms"].get("p99", 0)))
        row("wrk errors", median(lambda r: r["wrk"]["errors"]))
        row("wrk server CPU ms per request",
            median(lambda r: r["wrk"]["server_cpu_seconds"] * 1000 / max(r["wrk"]["requests"], 1)))  # fmt: skip
    if len(groups) > 1:
        row("every round, requests/s (Python / wrk)", "")
        for (label, workers), group in groups.items():
            each = ", ".join(f"{r['requests_per_second']:.0f}/{(r.get('wrk') or {}).get('requests_per_second', 0):.0f}"
                             for r in group)  # fmt: skip
            row(f"  {label} {workers}w", each)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer requests, shorter runs, a smaller batch")
    parser.add_argument("--only", default="latency,throughput,widget,batch", help="comma-separated parts to run")
    parser.add_argument("--requests", type=int, help="latency: measured requests (default 300, quick 50)")
    parser.add_argument("--warmup", type=int, default=20, help="latency: requests before measuring")
    parser.add_argument("--seconds", type=float, help="throughput: seconds per run (default 10, quick 3)")
    parser.add_argument("--connections", type=int, default=16, help="throughput: connections per client process")
    parser.add_argument("--workers", default="2,1", help="throughput: uvicorn worker counts, comma-separated")
    parser.add_argument("--repeat", type=int, default=1, help="throughput: rounds; the report gives medians")
    parser.add_argument("--compare", type=Path, action="append", default=[],
                        help="throughput: also serve this checkout (e.g. a `git worktree` of the baseline), in turn "
                        "with this one in every round; may be given more than once")  # fmt: skip
    parser.add_argument("--rate-limit", type=int, default=0,
                        help="throughput: UNERASE_RATE_LIMIT_PER_MINUTE of the servers (default 0: off)")  # fmt: skip
    parser.add_argument("--databases", default="sqlite",
                        help="throughput: sqlite, postgresql (a schema on UNERASE_TEST_DATABASE_URL's server) or "
                        "both, comma-separated")  # fmt: skip
    parser.add_argument("--env", action="append", default=[], metavar="NAME=VALUE",
                        help="throughput: a server setting (UNERASE_EXAMPLES_ENABLED=false); repeatable")  # fmt: skip
    parser.add_argument("--rows", type=int, help="batch: rows in the CSV (default 100,000, quick 10,000)")
    parser.add_argument("--batch-workers", type=int, default=2, help="batch: uvicorn workers")
    parser.add_argument("--tmp-dir", type=Path, help="where the temporary data directories go (default: the system's)")
    parser.add_argument("--json", type=Path, help="default benchmarks/results/web-<date>.json")
    args = parser.parse_args()
    if args.tmp_dir:
        tempfile.tempdir = str(args.tmp_dir)  # every TemporaryDirectory below, the app's data included
    parts = {p.strip() for p in args.only.split(",")}
    unknown = parts - {"latency", "throughput", "widget", "batch"}
    if unknown:
        parser.error(f"--only accepts latency, throughput, widget, batch; got {', '.join(sorted(unknown))}")
    requests = args.requests or (50 if args.quick else 300)
    seconds = args.seconds or (3.0 if args.quick else 10.0)
    rows = args.rows or (10_000 if args.quick else 100_000)

    results: dict[str, Any] = {"date": time.strftime("%Y-%m-%d %H:%M"), "cpus": os.cpu_count(), "quick": args.quick}
    # the load average says how busy the machine was besides this benchmark
    results["load_average_before"] = os.getloadavg()
    if "latency" in parts:
        results["latency"] = asyncio.run(latency(requests, args.warmup, 2000))
    if parts & {"throughput", "widget", "batch"}:
        workers = tuple(int(w) for w in args.workers.split(","))
        compare = tuple(args.compare)
        databases = tuple(d.strip() for d in args.databases.split(","))
        if set(databases) - {"sqlite", "postgresql"}:
            parser.error(f"--databases accepts sqlite, postgresql; got {args.databases}")
        if "postgresql" in databases and not os.environ.get("UNERASE_TEST_DATABASE_URL"):
            parser.error("--databases postgresql needs UNERASE_TEST_DATABASE_URL (a server to make schemas in)")
        results.update(load_and_batch(parts, seconds, args.connections, rows, args.batch_workers,
                                      worker_counts=workers, repeat=args.repeat, compare=compare,
                                      rate_limit=args.rate_limit, databases=databases,
                                      extra_env=dict(item.split("=", 1) for item in args.env)))  # fmt: skip
    results["load_average_after"] = os.getloadavg()
    print_report(results)
    path = args.json or ROOT / "benchmarks" / "results" / f"web-{time.strftime('%Y-%m-%d')}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(results, indent=2))
    print(f"\nresults written to {path}")


@contextmanager
def server_database(database: str) -> Iterator[str | None]:
    """None for SQLite (the data directory's file), else the URL of a throwaway PostgreSQL schema."""
    if database == "sqlite":
        yield None
        return
    from tests.postgres import fresh_schema_url

    with fresh_schema_url(os.environ["UNERASE_TEST_DATABASE_URL"]) as schema:
        yield schema.url


def load_and_batch(
    parts: set[str],
    seconds: float,
    connections: int,
    rows: int,
    batch_workers: int,
    *,
    worker_counts: tuple[int, ...] = (2, 1),
    repeat: int = 1,
    compare: tuple[Path, ...] = (),
    rate_limit: int = 0,
    databases: tuple[str, ...] = ("sqlite",),
    extra_env: dict[str, str] | None = None,
) -> dict[str, Any]:
    from benchmarks.corpus_web import csv_upload, text_set
    from engine.detector import Detector
    from engine.paths import shipped_vocabularies
    from engine.vocabulary.loader import load_vocabulary

    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        detector = Detector(load_vocabulary(shipped_vocabularies()), cache_dir=tmp / "texts-cache")
        texts = text_set(2000, 500, detector, hit_share=0.5).shuffled(seed=1)
        if "throughput" in parts:
            bodies = [json.dumps({"text": t, "lang": "en"}).encode() for t in texts]
            checkouts = [("this", ROOT), *((path.name, path) for path in compare)]
            runs = []
            for round_ in range(repeat):
                for workers in worker_counts:
                    # alternate which checkout goes first, so neither always meets the same machine state
                    for database, (label, root) in itertools.product(
                        databases, checkouts[:: 1 if round_ % 2 == 0 else -1]
                    ):
                        run_dir = tmp / f"throughput-{database}-{label}-{workers}-{round_}"
                        run_dir.mkdir()
                        # `workers` tells the app that its workers share the database (the limits go there)
                        env = {"UNERASE_RATE_LIMIT_PER_MINUTE": str(rate_limit), "UNERASE_WORKERS": str(workers),
                               **(extra_env or {})}  # fmt: skip
                        with server_database(database) as url:
                            env |= {"UNERASE_DATABASE_URL": url} if url else {}
                            with uvicorn_server(workers, run_dir, env, app_root=root) as server:
                                run = throughput(server, bodies, connections, seconds, warmup=2.0)
                                run["wrk"] = wrk_throughput(server, bodies, 32, seconds)
                        runs.append({"checkout": label, "app_root": str(root), "round": round_, "database": database,
                                     "rate_limit": rate_limit, "env": extra_env or {}, **run})  # fmt: skip
            results["throughput"] = runs
        if "widget" in parts:
            run_dir = tmp / "widget"
            run_dir.mkdir()
            with uvicorn_server(2, run_dir, {"UNERASE_ADMIN_TOKEN": "bench"}) as server:
                results["widget"] = widget_fetch(server, texts[:50], connections, seconds)
        if "batch" in parts:
            run_dir = tmp / "batch"
            run_dir.mkdir()
            upload = csv_upload(texts, rows)
            # the default upload limit (50 MB) is below a 100,000-row file of 500-character texts
            extra = {"UNERASE_MAX_UPLOAD_BYTES": str(len(upload) + 1_000_000), "UNERASE_MAX_BATCH_ROWS": str(rows)}
            with uvicorn_server(batch_workers, run_dir, extra) as server:
                job = batch(server, upload, rows, timeout=max(600.0, rows / 20))
            results["batch"] = {"workers": batch_workers, **job}
    return results


if __name__ == "__main__":
    main()
