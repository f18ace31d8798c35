"""Exceptions raised by quickscorer."""


class ModelFormatError(ValueError):
    """A model file or object is malformed or uses something quickscorer does not support.

    The message names the tree, node or field at fault.
    """


class InputError(ValueError):
    """The rows given to a scoring call do not fit the model (shape, dtype, feature names)."""
