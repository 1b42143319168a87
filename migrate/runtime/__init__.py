"""The runtime machinery the evidence sources, the checker and the audits share, below them all:
``torch_private`` (the one module that touches torch's private API), ``dispatch`` (the two dispatch
modes), ``recorders`` (on those modes, seeing every ATen call's dtypes), ``processes`` (forked worker
processes with timeouts), ``samples`` (an OpInfo's samples made and run), ``runs`` (what an OpInfo's
run saw, and its cache form) and ``variables`` (slots grouped by the dtypes seen together)."""
