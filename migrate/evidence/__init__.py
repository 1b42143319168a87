"""The evidence: what each source says about each overload, gathered, never decided.

The runtime sources share the worker processes, recorders and runs of ``migrate.runtime`` (below them):
``opinfo`` (OpInfo samples run under the recorders; its sample runner hands the calls its samples made to
``probe.prober``), ``probe`` (those calls made again at other dtypes, and calls built from the schema, the
argument catalogue and ``ScalarType`` arguments), ``promotion`` (mixed calls built for type promotion) and
``autocast`` (torch's registrations, observed), ``models`` (tiny transformers models' calls, recorded and probed as
OpInfo's are, joined to theirs). ``derived`` joins the runtime ones into one run's plans;
``gather`` collects every source (torchlib's annotations come from ``migrate.torchlib_source``) into
``Sources``, ``align`` maps them onto another release's file. ``torch_stages`` lists the stages made in
workers (each a ``migrate.runtime.worker_stage.WorkerStage``) and makes those a run reads beside the sweep on a
cold cache; ``sites`` says where a verdict was observed; ``recording`` reads another
device's sweep back; ``untyped`` lists, for ``--report``, why the untyped entries stayed so. Every rule that
turns this evidence into sets (verdicts, promotion, aliases, siblings' own calls, dtype arguments) is
``migrate.infer``'s, which this package never imports.
"""
