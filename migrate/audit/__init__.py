"""Judging written declarations by the calls they came from and by real exports: ``verify`` (the OpInfo
samples under the runtime checker), ``export`` and ``export_worker`` (torch.onnx.export and onnxruntime
per declared dtype), ``autocast`` (autocast policies against the declared dtypes). These replay the
OpInfo samples with the machinery the evidence runs them on (``migrate.runtime``), and import no evidence."""
