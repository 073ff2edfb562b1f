"""Benchmark of `unerase detect --input --jobs N`: one process against a pool, and a corpus of a million records.

    python benchmarks/bench_jobs.py [--records 100000] [--rounds 3] [--big 1000000]

1. Side by side: the same JSONL file through `detect --jobs 1` and `detect --jobs 2`, alternating, `--rounds`
   times each; medians of the wall times, their ratio, and whether the two outputs are the same bytes.
2. Once (skip with `--big 0`): `--big` records through `detect --jobs 2`, with the wall time and the peak memory
   of the command's processes (the parent and its workers, sampled from /proc every 0.2 s, and each one's own
   peak, VmHWM).

Records: about 300 characters each, English, with `"lang": "en"` (a catalogue that knows its language),
cut from the deterministic corpus of benchmarks/corpus.py over the shipped English vocabulary, so about one word
in 60 is a vocabulary term and some are disguised. The commands run as a user runs them, `python -m engine.cli`,
in fresh processes with the shipped vocabularies. The machine's load average is printed beside every figure:
on a shared machine, other work takes cores away from the pool.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.corpus import generate  # noqa: E402
from engine.paths import shipped_vocabularies  # noqa: E402
from engine.vocabulary.loader import load_vocabularies  # noqa: E402

DISTINCT = 20_000  # different texts; a bigger corpus repeats them under new ids


def write_corpus(path: Path, records: int) -> int:
    """`records` JSONL lines of about 300 characters; returns the characters of text written."""
    vocabulary = load_vocabularies([shipped_vocabularies() / "en"])
    texts = generate(vocabulary, "en", DISTINCT * 300, document_chars=225).documents  # ~300 on average
    chars = 0
    with path.open("w", encoding="utf-8") as out:
        for number in range(records):
            text = texts[number % len(texts)]
            chars += len(text)
            out.write(json.dumps({"id": f"rec-{number}", "text": text, "lang": "en"}, ensure_ascii=False) + "\n")
    return chars


def load() -> str:
    return "load average " + ", ".join(f"{value:.2f}" for value in os.getloadavg())


class Memory:
    """The resident memory of a process and its children, sampled from /proc while it runs."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.peak_total = 0  # KB, the largest sum over the tree seen in one sample
        self.own_peaks: dict[int, int] = {}  # KB, each process's VmHWM as last seen
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def __enter__(self) -> Memory:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _sample(self) -> None:
        while not self._stop.wait(0.2):
            total = 0
            for pid in self._tree():
                status = _status(pid)
                total += status.get("VmRSS", 0)
                if "VmHWM" in status:
                    self.own_peaks[pid] = status["VmHWM"]
            self.peak_total = max(self.peak_total, total)

    def _tree(self) -> list[int]:
        pids, index = [self.pid], 0
        while index < len(pids):
            try:
                children = Path(f"/proc/{pids[index]}/task/{pids[index]}/children").read_text().split()
            except OSError:
                children = []
            pids += [int(child) for child in children]
            index += 1
        return pids


def _status(pid: int) -> dict[str, int]:
    try:
        lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    except OSError:
        return {}
    return {key: int(rest.split()[0]) for key, _, rest in (line.partition(":") for line in lines) if key in _KEYS}


_KEYS = {"VmRSS", "VmHWM"}


def cpu_of_children() -> float:
    """CPU seconds of the finished child processes, theirs and their own children's (the pool's workers)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def detect(source: Path, output: Path, jobs: int, memory: bool = False) -> tuple[float, float, Memory | None]:
    """The wall time and the CPU seconds of one run of the command (and its memory, when asked)."""
    command = [sys.executable, "-m", "engine.cli", "detect", "--input", str(source), "--output", str(output)]
    cpu = cpu_of_children()
    started = time.perf_counter()
    process = subprocess.Popen([*command, "--jobs", str(jobs)], cwd=ROOT, stderr=subprocess.PIPE, text=True)
    sampler = Memory(process.pid) if memory else None
    if sampler:
        with sampler:
            _, err = process.communicate()
    else:
        _, err = process.communicate()
    elapsed = time.perf_counter() - started
    if process.returncode != 0:
        raise SystemExit(f"detect --jobs {jobs} failed ({process.returncode}): {err}")
    return elapsed, cpu_of_children() - cpu, sampler


def digest(path: Path) -> str:
    sha = hashlib.sha256()
    with path.open("rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            sha.update(block)
    return sha.hexdigest()


def main() -> None:
    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr]  # progress shows when piped to a file
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=100_000, help="records of the side-by-side runs")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--big", type=int, default=1_000_000, help="records of the one big run (0: skip it)")
    args = parser.parse_args()
    print(f"{os.cpu_count()} CPUs; {load()}")
    with tempfile.TemporaryDirectory(prefix="bench-jobs-") as folder:
        work = Path(folder)
        source = work / "corpus.jsonl"
        chars = write_corpus(source, args.records)
        print(f"side by side: {args.records:,} records, {chars:,} characters, {args.rounds} rounds")
        warm = work / "warm.jsonl"
        with source.open(encoding="utf-8") as head:
            warm.write_text("".join(line for _, line in zip(range(100), head, strict=False)), encoding="utf-8")
        detect(warm, work / "warm-out.jsonl", 1)  # the matcher's disk cache, so no round pays for building it
        times: dict[int, list[float]] = {1: [], 2: []}
        cpus: dict[int, list[float]] = {1: [], 2: []}
        digests: dict[int, set[str]] = {1: set(), 2: set()}
        for round_ in range(1, args.rounds + 1):
            for jobs in (1, 2) if round_ % 2 else (2, 1):
                output = work / f"out-{jobs}.jsonl"
                elapsed, cpu, _ = detect(source, output, jobs)
                times[jobs].append(elapsed)
                cpus[jobs].append(cpu)
                digests[jobs].add(digest(output))
                print(f"  round {round_}, --jobs {jobs}: {elapsed:.2f} s, {cpu:.2f} CPU s   ({load()})")
        one, two = statistics.median(times[1]), statistics.median(times[2])
        same = len(digests[1] | digests[2]) == 1
        cpu_one, cpu_two = statistics.median(cpus[1]), statistics.median(cpus[2])
        print(f"--jobs 1: median {one:.2f} s, {chars / one / 1e6:.2f} M chars/s, {cpu_one:.2f} CPU s")
        print(f"--jobs 2: median {two:.2f} s, {chars / two / 1e6:.2f} M chars/s, {cpu_two:.2f} CPU s")
        # the CPU the pool adds (a second worker's start, handing chunks over) does not depend on other work on the
        # machine; the wall-time speed-up does: the pool needs both cores free to reach the bound
        bound = 2 * cpu_one / cpu_two
        print(f"speed-up {one / two:.2f}x (with two idle cores at most {bound:.2f}x); outputs identical: {same}")
        results: dict[str, object] = {
            "records": args.records,
            "chars": chars,
            "jobs1_s": times[1],
            "jobs2_s": times[2],
            "jobs1_cpu_s": cpus[1],
            "jobs2_cpu_s": cpus[2],
            "speedup": one / two,
            "identical": same,
        }
        if args.big:
            source.unlink()
            big = work / "big.jsonl"
            chars = write_corpus(big, args.big)
            size = big.stat().st_size
            print(f"big run: {args.big:,} records, {chars:,} characters ({size / 1e6:.0f} MB file); {load()}")
            elapsed, cpu, memory = detect(big, work / "big-out.jsonl", 2, memory=True)
            assert memory is not None
            lines = sum(1 for _ in (work / "big-out.jsonl").open(encoding="utf-8"))
            peaks = sorted(memory.own_peaks.values(), reverse=True)
            print(
                f"  --jobs 2: {elapsed:.1f} s ({int(elapsed // 60)} min {elapsed % 60:.0f} s), "
                f"{chars / elapsed / 1e6:.2f} M chars/s, {cpu:.0f} CPU s, {lines:,} result lines"
            )
            print(
                f"  peak memory: {memory.peak_total / 1024:.0f} MB for all processes together; per process "
                + ", ".join(f"{peak / 1024:.0f}" for peak in peaks)
                + f" MB (the command, its workers, multiprocessing's resource tracker); {load()}"
            )
            results["big"] = {"records": args.big, "seconds": elapsed, "peak_total_kb": memory.peak_total}
    out = ROOT / "benchmarks" / "results"
    out.mkdir(exist_ok=True)
    (out / "jobs.json").write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
