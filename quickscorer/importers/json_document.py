"""What the JSON formats' importers share (the libraries' dumps, Solr LTR): a document read
from text, bytes or an object already parsed, and the refusal of fields a reader does not
know."""
from __future__ import annotations

import json
from typing import Any

from ..errors import ModelFormatError


def parsed(source: Any, what: str) -> Any:
    """``source`` as a parsed JSON value (text and bytes parsed; anything else as given), or a
    ModelFormatError naming ``what`` it should have been."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        source = bytes(source).decode("utf-8", errors="replace")
    if isinstance(source, str):
        try:
            return json.loads(source)
        except ValueError as exc:
            raise ModelFormatError(f"{what}: not JSON ({exc})") from None
    return source


def refuse_unknown(obj: Any, known: frozenset, where: str, what: str) -> None:
    """A ModelFormatError where ``obj`` is not an object or holds a field outside ``known``:
    a field a reader does not know may change the scores, so it is never ignored."""
    if not isinstance(obj, dict):
        raise ModelFormatError(f"{what}: {where} is not an object")
    unknown = sorted(set(obj) - known)
    if unknown:
        raise ModelFormatError(f"{what}: {where} holds {unknown}, which this reader does not "
                               f"know, and which may change the scores")
