"""A client for Cairn's JSON-RPC API, on the standard library alone.

    from cairn_client import Client, CairnError, types

    c = Client("http://127.0.0.1:8420")
    s = c.session_create(types.SessionCreateParams(model={"providerId": "openai", "apiKind": "chat_completions", "model": "gpt-4o-mini"}))
"""

from . import types
from .client import CairnError, Client

__all__ = ["Client", "CairnError", "types"]
