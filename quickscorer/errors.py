"""Exceptions raised by quickscorer."""


class ModelFormatError(ValueError):
    """A model file or object is malformed or uses something quickscorer does not support.

    The message names the tree, node or field at fault.
    """


class InputError(ValueError):
    """The rows given to a scoring call do not fit the model (shape, dtype, feature names)."""


class ModelFileError(ModelFormatError):
    """A prepared model file (``.qsm``) is damaged, from a newer format version, or not one.

    ``section`` is the index of the section at fault (-1: the header or the file as a whole)
    and ``section_name`` its name where the file's description gives it; the message names
    both.
    """

    def __init__(self, message: str, section: int = -1, code: int = 0,
                 section_name: str | None = None):
        super().__init__(message)
        self.section = section
        self.code = code
        self.section_name = section_name
