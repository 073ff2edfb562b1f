"""The batch worker: every process that runs jobs (the app with `run_jobs`, each `unerase worker`) runs one, and
they share the work of every job through the database (web/batch_claims.py has the claim protocol).

A worker takes the unfinished jobs oldest first. For each it claims a chunk of pending rows, analyses them with
bounded concurrency, writes their results and claims the next chunk, until nothing is left to claim; then, if
no row of the job is pending any more, one worker computes the statistics and completes it. Meanwhile a task
renews the leases of the rows it holds every third of `lease_seconds`.

Stopping (`stop()`, on SIGTERM): no new chunk is claimed and no new row is started; rows already being
analysed finish and are written, and the rest of the chunk is released at once for other workers. If the
process is cancelled before that, every row still held is released. A worker killed outright releases nothing:
its leases run out instead.

Waking: the node that queues a job sets `wake`, so its own worker starts at once; workers of other processes
find the job at their next look, every POLL_SECONDS.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging

from sqlalchemy.exc import SQLAlchemyError
from starlette.concurrency import run_in_threadpool

from engine.batch_language import analyse_record, noted
from engine.errors import UneraseError
from engine.result import summary
from web.batch_claims import BatchClaims, RowResult
from web.batches import statistics
from web.models import BatchJob, BatchRow
from web.services import Services

log = logging.getLogger("unerase.batches")
POLL_SECONDS = 2.0  # how often an idle worker looks for jobs another process queued
CHUNK_ROUNDS = 8  # rows claimed at once: this many rounds of batch_concurrency rows (a small job still splits)


class BatchWorker:
    def __init__(self, services: Services, wake: asyncio.Event | None = None) -> None:
        self.services = services
        self.owner = services.node
        self.claims = BatchClaims(services.store.engine)
        self.wake = wake if wake is not None else asyncio.Event()
        self.lease_seconds = services.settings.lease_seconds
        self.chunk = services.settings.batch_concurrency * CHUNK_ROUNDS
        self._stopping = asyncio.Event()
        self._held: set[int] = set()  # claimed rows not yet written: what the renewal keeps
        self._counting: str | None = None  # the job whose statistics this worker is computing

    def stop(self) -> None:
        """Claim nothing more, start no new row; `run` returns once the rows in flight are written."""
        self._stopping.set()
        self.wake.set()

    async def run(self) -> None:
        renewal = asyncio.create_task(self._renew_claims())
        try:
            while not self._stopping.is_set():
                self.wake.clear()
                try:
                    for job_id in await run_in_threadpool(self.services.store.unfinished_jobs):
                        if self._stopping.is_set():
                            break
                        await self.process(job_id)
                except SQLAlchemyError:
                    # the database went away for a moment: what this worker held is renewed by nobody and lapses
                    log.exception(
                        "batch worker %s: the database failed; looking again in %s s", self.owner, POLL_SECONDS
                    )
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self.wake.wait(), POLL_SECONDS)
        finally:
            renewal.cancel()
            await asyncio.gather(renewal, return_exceptions=True)

    async def process(self, job_id: str) -> None:
        """This worker's share of one job, then the job's completion if nothing of it is left pending."""
        job = await run_in_threadpool(self.services.store.job, job_id)
        if job is None or job.status == "complete":
            return
        await run_in_threadpool(self.claims.start, job_id)
        slots = asyncio.Semaphore(self.services.settings.batch_concurrency)
        while not self._stopping.is_set():
            rows = await run_in_threadpool(self.claims.claim, job_id, self.owner, self.chunk, self.lease_seconds)
            if not rows:
                break
            await self._work_through(job, rows, slots)
        if not self._stopping.is_set():
            await self._complete(job)

    async def _work_through(self, job: BatchJob, rows: list[BatchRow], slots: asyncio.Semaphore) -> None:
        ids = {row.id for row in rows if row.id is not None}
        self._held |= ids
        try:
            outcomes = await asyncio.gather(
                *(self._analyse(row, job.mode, job.fallback_language, slots) for row in rows)
            )
            results = [outcome for outcome in outcomes if outcome is not None]
            written = await run_in_threadpool(self.claims.save, self.owner, results)
            if written < len(results):
                log.warning(
                    "batch %s: %d of %d results not written: their leases had passed and another worker took them",
                    job.id, len(results) - written, len(results),
                )  # fmt: skip
            unstarted = ids - {result.row_id for result in results}
            if unstarted:
                await run_in_threadpool(self.claims.release, self.owner, unstarted)
        except BaseException:  # cancelled (stopping) or failed: give the rows back rather than let leases lapse
            await run_in_threadpool(self.claims.release, self.owner, ids)  # written rows are not pending: untouched
            raise
        finally:
            self._held -= ids

    async def _complete(self, job: BatchJob) -> None:
        claims = self.claims
        if not await run_in_threadpool(claims.claim_completion, job.id, self.owner, self.lease_seconds):
            return  # rows are still pending (held by others), or another worker is counting, or it is complete
        self._counting = job.id
        try:
            stats = await run_in_threadpool(statistics, self.services.store, job.id)
            if await run_in_threadpool(claims.complete, job.id, self.owner, stats):
                log.info("batch %s complete: %s rows", job.id, job.total_rows)
        except BaseException:
            await run_in_threadpool(claims.release_completion, job.id, self.owner)
            raise
        finally:
            self._counting = None

    async def _renew_claims(self) -> None:
        """Every third of the lease: one statement for the rows held, one more while counting a job."""
        while True:
            await asyncio.sleep(self.lease_seconds / 3)
            held, counting = set(self._held), self._counting
            try:
                if held:
                    await run_in_threadpool(self.claims.renew, self.owner, held, self.lease_seconds)
                if counting is not None:
                    await run_in_threadpool(self.claims.renew_completion, counting, self.owner, self.lease_seconds)
            except SQLAlchemyError:
                log.exception("batch worker %s: renewing its claims failed; trying again", self.owner)

    async def _analyse(
        self, row: BatchRow, mode: str, fallback: str | None, slots: asyncio.Semaphore
    ) -> RowResult | None:
        """The row's result; None when the worker is stopping before the row was started (it is released)."""
        assert row.id is not None
        async with slots:
            if self._stopping.is_set():
                return None
            try:
                events, assumed = await analyse_record(self.services.analyzer, row.text, row.language, mode, fallback)
            except UneraseError as exc:
                return RowResult(row.id, "error", error=exc.message)
        result = noted(summary(events, row.record_id), assumed)
        label = (result.get("decision") or {}).get("label")
        return RowResult(row.id, "done", label, json.dumps(result, ensure_ascii=False))
