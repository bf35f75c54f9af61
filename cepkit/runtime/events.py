"""Events and streams (docs/language.md §1): the public names, from the modules that hold them
(``event_record.py``: one event; ``stream.py``: a stream as columns)."""

from .event_record import Event
from .stream import Stream

__all__ = ["Event", "Stream"]
