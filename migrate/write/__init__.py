"""Writers: they apply a plan and never infer (they import no evidence: the torchlib writer reads
``migrate.torchlib_source``, the autocast generator ``migrate.autocast_source``). ``native_functions`` (the yaml, and lowering),
``torchlib`` (the codemod driver), ``outputs`` (all-or-none atomic writes, the diff)."""
