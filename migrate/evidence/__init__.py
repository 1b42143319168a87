"""Evidence sources: ``torchlib`` (a static scan of the library's annotations), ``opinfo``
(OpInfo samples run under the recorders) and ``probe`` (calls made again with other dtypes:
calls the OpInfo samples made, or calls built from schemas). ``torchlib`` is independent of
the others. ``opinfo`` and ``probe`` share the worker processes, recorders and runs of
``migrate.runtime`` (below every source), and ``opinfo`` uses ``probe`` in one way: its sample runner hands the calls its samples
made to ``probe.prober`` (and its forwards try ``probe.prober``'s dtypes). ``derived``, above
them, joins the two into one run's plans."""
