"""Writers: they apply a plan and never infer. ``native_functions`` (the yaml, and lowering),
``torchlib`` (the codemod driver), ``outputs`` (all-or-none atomic writes, the diff)."""
