"""The engine's command line (`python -m engine.cli`, and the `unerase` program through web/cli.py).

One module per command (detect, analyze, batch, evaluate, audit, vocab, shards), what they share in `common`,
the ordered runner of `analyze --input` and `batch` in `runner`, the worker processes of `--jobs` in `pool`,
the `--shard` rule in `shard`, the parser and dispatch in `main`.
"""

from engine.cli.main import build_parser, main

__all__ = ["build_parser", "main"]
