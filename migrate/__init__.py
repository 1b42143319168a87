"""dtype-migrate: declare dtype constraints in native_functions.yaml and rewrite torchlib to them."""

__version__ = "0.1.0"
