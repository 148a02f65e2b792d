"""Workspace paths on the wire.

Linux names are bytes, not text. The API writes each byte that is not
part of valid UTF-8 as a lone surrogate ``\\udc80``–``\\udcff``: Python's
own "surrogateescape" convention, which ``json`` keeps as it is. So a
path from a reply is a ``str`` that ``open()``, ``os.fsencode()`` and the
rest of ``os`` take directly (in Python's usual UTF-8 filesystem
encoding); ``path_bytes`` and ``path_string`` convert explicitly, and
queries carry the bytes percent-encoded.
"""

from urllib.parse import quote


def path_bytes(p: str) -> bytes:
    """The bytes of an API path string."""
    return p.encode("utf-8", "surrogateescape")


def path_string(b: bytes) -> str:
    """The API's string for a path's bytes: valid UTF-8 as text, every other byte escaped."""
    return bytes(b).decode("utf-8", "surrogateescape")


def path_query(p: str) -> str:
    """A path for a query string: its bytes, percent-encoded."""
    return quote(path_bytes(p), safe="/-._~")
