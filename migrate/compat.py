"""The public spelling of torchgen compatibility: ``migrate.compat.parse_native_yaml``."""

from migrate.check.torchgen import parse_native_yaml

__all__ = ["parse_native_yaml"]
