"""Errors shared across stages."""


class SetupError(RuntimeError):
    """A stage cannot be set up at all (a model missing, an extra not installed).

    Unlike a failure on one record, this stops a dataset run: every other record would fail
    the same way.
    """
