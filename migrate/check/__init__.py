"""Checking declarations: ``checker`` (every ATen call's dtypes at run time), ``verify``
(the OpInfo samples under the checker), ``torchgen`` (torchgen's model of an annotated file)."""
