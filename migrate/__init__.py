"""dtype-migrate: declare dtype constraints in native_functions.yaml and rewrite torchlib to them."""

__version__ = "0.1.0"


def checking(declared, *, collect: bool = False):
    """Check every ATen call's dtypes against an annotated native_functions.yaml (see ``migrate.check.checker``).

    Imported on use: torch is heavy, and the command line should not pay for it.
    """
    from migrate.check.checker import checking as checker  # here: imports torch, which `import migrate` must not

    return checker(declared, collect=collect)
