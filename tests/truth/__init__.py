"""The truth suite: what ATen accepts on CPU, from hand-written calls on non-empty tensors.

Independent of the inference code (no ``migrate.evidence``, no ``migrate.infer``): the
cases are written by hand (``cases.py``) and their verdicts come from calling torch
(``runner.py``), so a written yaml can be scored against them (``bench/bench_truth.py``).
"""
