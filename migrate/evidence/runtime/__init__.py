"""What the runtime evidence sources share: ``recorders`` (on the dispatch modes, seeing every
ATen call's dtypes), ``workers`` (forked processes with timeouts), ``records`` (what a run
saw, and its cache form) and ``variables`` (slots grouped by the dtypes seen together)."""
