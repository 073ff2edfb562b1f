"""Corpus scale from the command line: `--jobs N` (a pool of worker processes, engine/cli/pool.py), `--shard K/N`
(engine/cli/shard.py) and the vocabulary version on every result line of `detect --input` and `analyze --input`.

The pool runs with small chunks here, so a few hundred records are many chunks shared by both workers.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import engine.cli.pool as pool
from engine.cli import build_parser, main
from engine.cli.analyze import cmd_analyze
from engine.cli.shard import Shard, shard_of
from engine.errors import UneraseError
from engine.vocabulary.loader import load_vocabularies

from .support.paths import FIXTURES, PROJECT

VOCAB = str(FIXTURES / "vocab")
WORDS = {
    "en": "the welfare queens again a crippled economy he wrote junkie in quotes what a nice day at the port".split(),
    "de": "Ein Zigeunerschnitzel und ein Bier für den Tisch da drüben bitte".split(),
    "it": "Quel sordo non sente niente oggi".split(),
}


def corpus(path: Path, count: int = 300, seed: int = 11) -> Path:
    """`count` records in several languages, some without an id, some repeating an id, some without a language,
    and lines that are not records (broken JSON, a list, an empty text, an unsupported language, blank lines)."""
    chance = random.Random(seed)
    lines = []
    for number in range(count):
        lang = chance.choice(sorted(WORDS))
        record: dict[str, object] = {"id": f"r{number}", "text": " ".join(chance.choices(WORDS[lang], k=12))}
        if number % 3:
            record["lang"] = lang
        if number % 41 == 5:
            del record["id"]
        if number % 53 == 9:
            record["id"] = "r1"  # an id seen before
        lines.append(json.dumps(record, ensure_ascii=False))
        if number % 37 == 3:
            lines += ["{broken", "", "[1, 2]", '{"id": "e", "text": ""}', '{"text": "ok", "lang": "xx"}']
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def run(*args: str) -> tuple[int, str]:
    """The command's exit code and its output file's text."""
    *_, output = args
    code = main([*args[:-1], "--output", output, "--vocab", VOCAB])
    return code, Path(output).read_text(encoding="utf-8")


@pytest.fixture
def small_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pool, "CHUNK", 16)  # read in the parent, where the input is cut into chunks


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("cache")


@pytest.fixture(autouse=True)
def own_cache(cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("UNERASE_CACHE_DIR", str(cache_dir))  # the spawned workers inherit it


@pytest.mark.usefixtures("small_chunks")
@pytest.mark.parametrize("command", ["detect", "analyze"])
def test_two_jobs_write_the_bytes_one_job_writes(tmp_path: Path, command: str) -> None:
    source = str(corpus(tmp_path / "in.jsonl"))
    extra = ["--no-cache"] if command == "analyze" else []
    one_code, one = run(command, "--input", source, *extra, "--jobs", "1", str(tmp_path / "one.jsonl"))
    two_code, two = run(command, "--input", source, *extra, "--jobs", "2", str(tmp_path / "two.jsonl"))
    assert one == two
    assert one_code == two_code == 3  # the bad lines are errors in both
    lines = [json.loads(line) for line in one.splitlines()]
    assert len(lines) == 300 + 4 * 9  # a blank line is no record and has no result
    assert sum("error" not in line for line in lines) == 300
    assert sum(bool(line.get("hits")) for line in lines) > 200  # the records were analysed, not passed through
    ids = [line["id"] for line in lines if str(line.get("id")).startswith("r")]
    assert ids[:3] == ["r0", "r1", "r2"]  # input order


def test_two_jobs_read_stdin_and_write_stdout_as_the_program_does(tmp_path: Path) -> None:
    """The `unerase` program itself (a fresh process, as users run it), reading a pipe, writing to stdout."""
    source = corpus(tmp_path / "in.jsonl", count=80)
    _, expected = run("detect", "--input", str(source), str(tmp_path / "one.jsonl"))
    command = [sys.executable, "-m", "web.cli", "detect", "--input", "-", "--jobs", "2", "--vocab", VOCAB]
    done = subprocess.run(
        command, input=source.read_text(encoding="utf-8"), capture_output=True, text=True, cwd=PROJECT, timeout=120
    )
    assert done.returncode == 3, done.stderr
    assert done.stdout == expected and "80 records analysed" in done.stderr


def test_the_pool_uses_every_worker_keeps_order_and_reads_ahead_only_a_few_chunks() -> None:
    taken: list[int] = []
    written: list[tuple[int, int]] = []  # (first line of the chunk written, chunks taken from the input by then)

    def lines() -> Iterator[str]:
        for number in range(1, 401):
            taken.append(number)
            yield f"line {number}\n"

    pids: set[int] = set()

    def write(text: str) -> None:
        first, pid = text.split("|")
        written.append((int(first), -(-len(taken) // 10)))
        pids.add(int(pid))

    done, failed = pool.run_in_pool(
        pool.chunks(lines(), 10),
        _worker_pid,
        write,
        jobs=2,
        initializer=_slow_start,
        initargs=(0.2,),
    )
    assert [first for first, _ in written] == list(range(1, 401, 10))  # in input order
    assert (done, failed) == (400, 0)
    assert len(pids) == 2 and os.getpid() not in pids  # both workers took chunks, none ran in this process
    # when a chunk is written, fewer than jobs * AHEAD chunks have been taken beyond it
    assert all(taken_then - index < 2 * pool.AHEAD for index, (_, taken_then) in enumerate(written, start=1))


def test_a_worker_that_dies_is_an_error_not_a_hang(tmp_path: Path) -> None:
    written: list[str] = []
    with pytest.raises(UneraseError, match="a worker process ended unexpectedly"):
        pool.run_in_pool(
            pool.chunks((f"line {n}\n" for n in range(1, 101)), 10),
            _die_on_third,
            written.append,
            jobs=2,
            initializer=_slow_start,
            initargs=(0.0,),
        )
    assert written == [f"{first}|" for first in (1, 11)][: len(written)]  # whole chunks, in order, then nothing


def _die_on_third(chunk: pool.Chunk) -> pool.Done:
    """The test's work: the worker handed the third chunk ends at once, as one killed for its memory would."""
    if chunk[0] == 21:
        os._exit(9)
    time.sleep(0.05)
    return f"{chunk[0]}|", len(chunk[1]), 0


def _slow_start(seconds: float) -> None:
    """The pool's initializer for the test above: a start that takes a while, as loading an analyzer does."""
    time.sleep(seconds)


def _worker_pid(chunk: pool.Chunk) -> pool.Done:
    """The test's work: a chunk takes a little while (so both workers get some) and says who analysed it."""
    time.sleep(0.02)
    first, lines = chunk
    return f"{first}|{os.getpid()}", len(lines), 0


@pytest.mark.usefixtures("small_chunks")
def test_the_shards_together_are_the_whole_output(tmp_path: Path) -> None:
    source = str(corpus(tmp_path / "in.jsonl"))
    _, whole = run("detect", "--input", source, str(tmp_path / "whole.jsonl"))
    shards = []
    for index in (1, 2, 3):
        jobs = "2" if index == 2 else "1"  # the share does not depend on --jobs
        _, text = run("detect", "--input", source, "--shard", f"{index}/3", "--jobs", jobs, str(tmp_path / "s.jsonl"))
        shards.append(text.splitlines())
    assert all(len(lines) > 60 for lines in shards)  # each machine gets a real share
    assert sorted(line for lines in shards for line in lines) == sorted(whole.splitlines())
    # each shard keeps input order: it is the whole output with the other shards' lines taken out
    for lines in shards:
        mine = set(lines)
        assert [line for line in whole.splitlines() if line in mine] == lines
    _, only = run("detect", "--input", source, "--shard", "1/1", str(tmp_path / "only.jsonl"))
    assert only == whole


def test_a_record_with_an_id_goes_by_its_id_and_one_without_by_its_line() -> None:
    def documented(key: str, count: int) -> int:  # the rule docs/corpus.md and engine/cli/shard.py state
        return int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big") % count + 1

    for number in range(1, 200):
        record = {"id": f"post-{number}", "text": "x"}
        assert shard_of(number, record, 4) == documented(f'id "post-{number}"', 4)
        assert shard_of(number + 1000, record, 4) == shard_of(number, record, 4)  # wherever it is in the file
        assert shard_of(number, {"text": "x"}, 4) == documented(f"line {number}", 4)
        assert shard_of(number, None, 4) == documented(f"line {number}", 4)
    assert shard_of(1, {"id": 7, "text": "x"}, 5) == documented("id 7", 5)
    assert {shard_of(n, {"id": n}, 3) for n in range(30)} == {1, 2, 3}


def test_the_shard_does_not_depend_on_the_hash_seed(tmp_path: Path) -> None:
    source = str(corpus(tmp_path / "in.jsonl", count=60))
    outputs = []
    for seed in ("1", "2"):
        command = [sys.executable, "-m", "engine.cli", "detect", "--input", source, "--shard", "2/3", "--vocab", VOCAB]
        env = {**os.environ, "PYTHONHASHSEED": seed}
        done = subprocess.run(command, capture_output=True, text=True, cwd=PROJECT, env=env, timeout=120)
        assert done.returncode == 3, done.stderr
        outputs.append(done.stdout)
    assert outputs[0] == outputs[1] and outputs[0].count("\n") > 10


@pytest.mark.parametrize("command", ["detect", "analyze"])
def test_every_line_carries_the_vocabulary_version(tmp_path: Path, command: str) -> None:
    source = str(corpus(tmp_path / "in.jsonl", count=40))
    version = load_vocabularies([VOCAB]).version
    extra = ["--no-cache"] if command == "analyze" else []
    _, first = run(command, "--input", source, *extra, str(tmp_path / "a.jsonl"))
    _, again = run(command, "--input", source, *extra, str(tmp_path / "b.jsonl"))
    lines = [json.loads(line) for line in first.splitlines()]
    assert {line["vocabulary_version"] for line in lines} == {version}  # error lines included
    assert any("error" in line for line in lines) and len(version) == 16
    assert first == again  # stable from run to run


def test_the_version_changes_when_the_vocabulary_does(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    changed = tmp_path / "vocab"
    shutil.copytree(VOCAB, changed)
    english = changed / "en" / "fixture.yaml"
    english.write_text(english.read_text(encoding="utf-8").replace("widely heard", "often heard"), encoding="utf-8")
    source = tmp_path / "in.jsonl"
    source.write_text('{"id": 1, "text": "the welfare queens again", "lang": "en"}\n', encoding="utf-8")
    versions = []
    for vocab in (VOCAB, str(changed)):
        assert main(["detect", "--input", str(source), "--vocab", vocab]) == 0
        versions.append(json.loads(capsys.readouterr().out)["vocabulary_version"])
    assert versions[0] == load_vocabularies([VOCAB]).version
    assert versions[1] == load_vocabularies([str(changed)]).version != versions[0]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--jobs", "0"], "--jobs 0 is not accepted; give the number of worker processes (1 or more)"),
        (["--jobs", "-2"], "--jobs -2 is not accepted"),
        (["--jobs", "two"], "--jobs two is not accepted"),
        (["--shard", "0/2"], "--shard '0/2' is not accepted; in K/N, N is the number of shards (1 or more)"),
        (["--shard", "3/2"], "K is which one, from 1 to N"),
        (["--shard", "1/0"], "N is the number of shards (1 or more)"),
        (["--shard", "a/b"], "--shard 'a/b' is not accepted; give K/N, e.g. 1/4"),
        (["--shard", "2"], "give K/N"),
    ],
)
@pytest.mark.parametrize("command", ["detect", "analyze"])
def test_bad_jobs_and_shards_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str, args: list[str], message: str
) -> None:
    source = corpus(tmp_path / "in.jsonl", count=3)
    assert main([command, "--input", str(source), "--vocab", VOCAB, *args]) == 2
    captured = capsys.readouterr()
    assert message in captured.err and captured.out == ""


@pytest.mark.parametrize("command", ["detect", "analyze"])
def test_jobs_and_shards_need_an_input_file(capsys: pytest.CaptureFixture[str], command: str) -> None:
    for option, value in (("--jobs", "2"), ("--shard", "1/2")):
        assert main([command, "a text", "--vocab", VOCAB, option, value]) == 2
        assert f"{option} applies to --input FILE.jsonl only" in capsys.readouterr().err


def test_auto_jobs_is_one_per_cpu() -> None:
    assert pool.parse_jobs("auto") == (os.cpu_count() or 1) and pool.parse_jobs(None) == 1
    assert pool.parse_jobs("3") == 3 and Shard.parse(" 2 / 5 ") == Shard(2, 5)


def test_a_worker_that_cannot_open_its_analyzer_says_why_as_one_process_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = corpus(tmp_path / "in.jsonl", count=3)
    for jobs in ("1", "2"):
        args = ["analyze", "--input", str(source), "--vocab", VOCAB, "--backend", "llama-cpp", "--jobs", jobs]
        assert main(args) == 2
        assert "backend llama-cpp needs --model" in capsys.readouterr().err


def test_a_sites_precedents_are_not_shared_with_workers(tmp_path: Path) -> None:
    source = corpus(tmp_path / "in.jsonl", count=3)
    args = build_parser().parse_args(["analyze", "--input", str(source), "--vocab", VOCAB, "--jobs", "2"])
    with pytest.raises(UneraseError, match="--jobs with --site is not supported"):
        cmd_analyze(args, None, site=object())  # type: ignore[arg-type]


def test_shards_check_accepts_the_whole_set_and_names_what_is_wrong(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = str(corpus(tmp_path / "in.jsonl", count=120))
    outputs = []
    for index in (1, 2, 3):
        outputs.append(str(tmp_path / f"shard-{index}.jsonl"))
        args = ["detect", "--input", source, "--shard", f"{index}/3", "--output", outputs[-1], "--vocab", VOCAB]
        assert main(args) == 3  # the corpus has bad lines, each shard some of them
    capsys.readouterr()

    assert main(["shards", "check", *outputs, "--input", source]) == 0
    assert "ok: one vocabulary version, one result per record" in capsys.readouterr().out

    assert main(["shards", "check", *outputs[:2], "--input", source]) == 1  # a shard left out
    assert "a shard is missing, unfinished or given twice" in capsys.readouterr().err
    assert main(["shards", "check", *outputs, outputs[0], "--input", source]) == 1  # a shard given twice
    assert "a shard is missing" in capsys.readouterr().err

    # the same number of lines, but one record's result replaced by another's
    lines = Path(outputs[0]).read_text(encoding="utf-8").splitlines()
    first = json.loads(lines[0])
    swapped = tmp_path / "swapped.jsonl"
    swapped.write_text("\n".join([json.dumps({**first, "id": "not-in-the-input"}), *lines[1:]]) + "\n")
    assert main(["shards", "check", str(swapped), *outputs[1:], "--input", source]) == 1
    assert "the ids of the results are not the ids of the input" in capsys.readouterr().err

    # one shard analysed with another vocabulary
    other = tmp_path / "other.jsonl"
    other.write_text("\n".join(json.dumps({**json.loads(x), "vocabulary_version": "0" * 16}) for x in lines) + "\n")
    assert main(["shards", "check", str(other), *outputs[1:]]) == 1
    captured = capsys.readouterr()
    assert "do not all carry one vocabulary_version" in captured.err and "0000000000000000 (" in captured.out

    broken = tmp_path / "broken.jsonl"
    broken.write_text("{not json\n")
    assert main(["shards", "check", str(broken)]) == 2
    assert f"{broken}:1: not a result line of unerase" in capsys.readouterr().err
