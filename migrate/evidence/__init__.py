"""Evidence sources: ``torchlib`` (a static scan of the library's annotations), ``opinfo``
(OpInfo samples run under the recorders) and ``probe`` (calls made again with other dtypes:
calls the OpInfo samples made, or calls built from schemas). ``torchlib`` is independent of
the others. ``opinfo`` and ``probe`` share the worker processes, recorders and records of
``runtime``, and ``opinfo`` uses ``probe`` in one way: its worker hands the calls its samples
made to ``probe.worker`` (and its forwards try ``probe.worker``'s dtypes). ``derived``, above
them, joins the two into one run's plans."""
