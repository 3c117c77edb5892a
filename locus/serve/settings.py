"""What `locus serve`'s options set, with every default in one place."""

from dataclasses import dataclass, field

MAX_QUERIES = 256  # queries in one /v1/route request (413 above; --max-queries)
MAX_PROMPT_CHARS = 100_000  # characters of one query, prompt or chat message (413 above; --max-prompt-chars)
MAX_EVALUATIONS = 100_000  # scored prompts in one add request (413 above)
MAX_BODY_BYTES = 10 * 2**20  # request body (413 above, by its Content-Length or as it is read)
MAX_JSON_DEPTH = 32  # nesting of a JSON body (400 above): Python's parser recurses, and no request needs more than 6
BATCH_QUERIES = 32  # queries of concurrent /v1/route requests encoded and scored in one pass
BATCH_WORKERS = 2  # batches in flight: both encode at once, and the event loop answers one while the other encodes
BATCH_WAIT_MS = 2.0  # under load, how long the batcher waits for more requests
CHAT_ALIAS = "locus-auto"  # the chat-completions model name that routes
BACKEND_TIMEOUT = 60.0  # seconds a backend may take to connect / between two chunks
AFFINITY_SECONDS = 1800.0  # a conversation key keeps its model this long after its last turn (--affinity-seconds)
MAX_SESSIONS = 100_000  # conversation keys remembered at once (the least recently used go first)
LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "[::1]")  # Host headers always served


@dataclass
class Settings:
    """`locus serve`'s settings beyond the pool. `token` (None: none) guards adding and deleting models, and chat
    completions; off loopback (`public`) it is required and guards /v1/route too unless `open_route`."""

    max_queries: int = MAX_QUERIES
    max_prompt_chars: int = MAX_PROMPT_CHARS
    max_body_bytes: int = MAX_BODY_BYTES
    max_json_depth: int = MAX_JSON_DEPTH
    batch_queries: int = BATCH_QUERIES
    batch_wait_ms: float = BATCH_WAIT_MS
    batch_workers: int = BATCH_WORKERS
    backends: dict = field(default_factory=dict)  # {pool model name: Backend}
    chat_alias: str = CHAT_ALIAS
    backend_timeout: float = BACKEND_TIMEOUT
    affinity_seconds: float = AFFINITY_SECONDS  # 0: no session affinity
    token: str | None = None
    bind_host: str = "127.0.0.1"  # the address bound: a Host header naming it is served
    public: bool = False  # bound to an address other machines can reach
    open_route: bool = False  # off loopback, /v1/route without the token
    allowed_hosts: tuple = ()  # Host headers served besides LOOPBACK_HOSTS ("*": any)
    allowed_origins: tuple = ()  # browser origins allowed to call (CORS for them; none by default)
