"""What the runtime evidence sources share: ``recorders`` (on the dispatch modes, seeing every
ATen call's dtypes), ``processes`` (forked worker processes with timeouts), ``runs`` (what an
OpInfo's run saw, and its cache form) and ``variables`` (slots grouped by the dtypes seen together)."""
