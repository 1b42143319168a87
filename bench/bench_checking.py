"""Overhead of the dtype checker on a small transformer block's forward; prints, never asserts.

A pre-norm block (LayerNorm, one qkv projection, scaled_dot_product_attention, the output
projection, LayerNorm, a GELU MLP; d_model 256, 4 heads, MLP 1024) on a batch of 8 sequences
of 128 tokens, float32, CPU, no grad. The yaml is the fully migrated real one, written by the
command line into a temporary folder (or given with --native-functions). Rounds of forwards
with and without the checker alternate in one run; each figure is the ratio of the medians:
  (a) forwards inside a ``checking()`` block, as a checked program runs (the target, <= 3);
  (b) ``checking()`` entered around each forward (Declarations already read);
  (c) as (a) on one sequence of 8 tokens, where dispatch dominates: the checker's cost per call shows.

    /work/main/.venv/bin/python bench/bench_checking.py [--rounds N] [--native-functions FILE] [--threads N]

On a shared machine, --threads 1 is steadier: a two-thread kernel waits for its slower thread.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import io
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import torch
import torch.nn.functional as F

from migrate.check.checker import Declarations, checking
from migrate.cli import main as cli
from migrate.runtime.recorders import Recording

D_MODEL, HEADS, MLP, BATCH, SEQUENCE = 256, 4, 1024, 8, 128
FORWARDS_PER_ROUND = 10


class Block(torch.nn.Module):
    """Attention and MLP, each behind a LayerNorm and added back (a GPT-style block)."""

    def __init__(self) -> None:
        super().__init__()
        self.norm1 = torch.nn.LayerNorm(D_MODEL)
        self.qkv = torch.nn.Linear(D_MODEL, 3 * D_MODEL)
        self.proj = torch.nn.Linear(D_MODEL, D_MODEL)
        self.norm2 = torch.nn.LayerNorm(D_MODEL)
        self.up = torch.nn.Linear(D_MODEL, MLP)
        self.down = torch.nn.Linear(MLP, D_MODEL)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, sequence, _ = x.shape
        q, k, v = self.qkv(self.norm1(x)).view(batch, sequence, 3, HEADS, D_MODEL // HEADS).permute(2, 0, 3, 1, 4)
        attended = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(attended.transpose(1, 2).reshape(batch, sequence, D_MODEL))
        return x + self.down(F.gelu(self.up(self.norm2(x))))


def migrated_yaml(folder: Path) -> Path:
    """The real yaml, fully migrated by the command line into ``folder``."""
    with contextlib.redirect_stderr(io.StringIO()) as err:
        code = cli(["--out", str(folder), "--yaml-only"])
    if code != 0:
        raise SystemExit(f"the migration failed ({code}): {err.getvalue().strip()}")
    return folder / "native_functions.yaml"


def timed(forward: Callable[[], object], times: int) -> list[float]:
    """The wall time of each of ``times`` forwards."""
    found = []
    for _ in range(times):
        started = time.perf_counter()
        forward()
        found.append(time.perf_counter() - started)
    return found


def medians(checked: Callable[[], list[float]], plain: Callable[[], list[float]], rounds: int) -> tuple[float, float]:
    """Median forward time (checked, plain) over ``rounds`` alternating rounds, after one round of each to warm up."""
    checked(), plain()
    with_checker: list[float] = []
    without: list[float] = []
    for _ in range(rounds):
        with_checker += checked()
        without += plain()
    return statistics.median(with_checker), statistics.median(without)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=10, help="rounds of 10 forwards, timed each way")
    parser.add_argument("--native-functions", type=Path, help="an annotated yaml (default: migrate the real one now)")
    parser.add_argument("--threads", type=int, help="torch's intra-op threads (default: torch's own choice)")
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)

    with tempfile.TemporaryDirectory(prefix="bench-checking-") as folder:
        path = args.native_functions or migrated_yaml(Path(folder))
        started = time.perf_counter()
        declarations = Declarations.load(path)
        loaded = time.perf_counter() - started

    torch.manual_seed(0)
    block = Block().eval()
    x = torch.randn(BATCH, SEQUENCE, D_MODEL)
    with torch.no_grad():
        with Recording() as recording, recording.active():
            block(x)
        calls = recording.observations()
        declared = sum(o.count for o in calls if o.overload.removeprefix("aten::") in declarations.by_name)
        print(f"threads={torch.get_num_threads()} rounds={args.rounds}x{FORWARDS_PER_ROUND}; {len(declarations.overloads)} overloads declared, read in {loaded:.2f} s")
        print(f"one forward: {sum(o.count for o in calls)} ATen calls, {declared} of them to declared overloads")

        plain = functools.partial(timed, lambda: block(x), FORWARDS_PER_ROUND)

        def checked_block() -> list[float]:
            with checking(declarations):
                return timed(lambda: block(x), FORWARDS_PER_ROUND)

        checked, unchecked = medians(checked_block, plain, args.rounds)
        print(f"(a) inside checking(): {checked * 1e3:.2f} ms a forward, plain {unchecked * 1e3:.2f} ms: ratio {checked / unchecked:.2f} (target <= 3)")

        def entered() -> None:
            with checking(declarations):
                block(x)

        checked, unchecked = medians(functools.partial(timed, entered, FORWARDS_PER_ROUND), plain, args.rounds)
        print(f"(b) checking() entered per forward: {checked * 1e3:.2f} ms, plain {unchecked * 1e3:.2f} ms: ratio {checked / unchecked:.2f}")

        small = torch.randn(1, 8, D_MODEL)

        def checked_small() -> list[float]:
            with checking(declarations):
                return timed(lambda: block(small), FORWARDS_PER_ROUND)

        checked, unchecked = medians(checked_small, functools.partial(timed, lambda: block(small), FORWARDS_PER_ROUND), args.rounds)
        per_call = (checked - unchecked) / sum(o.count for o in calls)
        print(
            f"(c) one sequence of 8 tokens: {checked * 1e3:.2f} ms checked, {unchecked * 1e3:.2f} ms plain: "
            f"ratio {checked / unchecked:.2f}, {per_call * 1e6:.0f} us a call"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
