"""Judging written declarations by the calls they came from and by real exports: ``verify`` (the OpInfo
samples under the runtime checker), ``export`` and ``export_worker`` (torch.onnx.export and onnxruntime
per declared dtype), ``autocast`` (autocast policies against the declared dtypes). These replay the
evidence's samples on its worker processes, so, unlike ``migrate.check``, they import the evidence."""
