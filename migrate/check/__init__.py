"""Checking declarations as PyTorch uses them: ``checker`` (every ATen call's dtypes at run time, the
user-facing ``migrate.checking``) and ``torchgen`` (torchgen's model of an annotated file). It imports
no evidence: the dispatch modes it stands on are ``migrate.runtime.dispatch``."""
