"""Session affinity for chat completions: a conversation key (the ``x-locus-session`` header, else OpenAI's
``user`` field) keeps a multi-turn conversation on the model routed for its first turn, for `seconds` after
its last turn, as vLLM's semantic router and LiteLLM do: a model switched mid-conversation loses its context
and prompt cache. Only a removed model (or an expired key) routes the conversation anew."""

import hashlib
import threading
import time
from collections import OrderedDict

SESSION_HEADER = "x-locus-session"


class Sessions:
    """Conversation key -> model name, least recently used first; keys are kept hashed (they may name users)."""

    def __init__(self, seconds: float, capacity: int, clock=time.monotonic):
        self.seconds = float(seconds)
        self.capacity = max(1, int(capacity))
        self.clock = clock
        self.lock = threading.Lock()
        self.models: OrderedDict[bytes, tuple[str, float]] = OrderedDict()  # key -> (model, expiry)

    @property
    def enabled(self) -> bool:
        return self.seconds > 0

    @staticmethod
    def _key(key: str) -> bytes:
        return hashlib.sha256(key.encode("utf-8", "surrogatepass")).digest()

    def get(self, key: str | None, available) -> str | None:
        """The model this conversation was routed to, if its key is live and the model is still `available`
        (a collection of names); the key's time is renewed."""
        if not self.enabled or not key:
            return None
        k, now = self._key(key), self.clock()
        with self.lock:
            hit = self.models.get(k)
            if hit is None:
                return None
            model, expiry = hit
            if expiry <= now or model not in available:
                del self.models[k]
                return None
            self.models[k] = (model, now + self.seconds)
            self.models.move_to_end(k)
            return model

    def put(self, key: str | None, model: str) -> None:
        if not self.enabled or not key:
            return
        k = self._key(key)
        with self.lock:
            self.models[k] = (model, self.clock() + self.seconds)
            self.models.move_to_end(k)
            while len(self.models) > self.capacity:
                self.models.popitem(last=False)

    def __len__(self) -> int:
        return len(self.models)


def session_key(headers, body: dict) -> str | None:
    """The conversation key of a chat request: the header, else OpenAI's ``user`` field (text only)."""
    key = headers.get(SESSION_HEADER)
    if key is None:
        user = body.get("user")
        key = user if isinstance(user, str) else None
    key = key.strip() if key else None
    return key or None
