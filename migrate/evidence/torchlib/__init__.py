"""Torchlib evidence: ``scan`` reads each module statically (libcst, never importing it),
``resolve`` turns the facts into per-overload variables."""
