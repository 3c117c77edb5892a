"""Micro-batching of ``POST /v1/route``: concurrent requests share one encoder and predictor pass."""

import asyncio
import concurrent.futures

from locus import inference
from locus.serve.settings import BATCH_QUERIES, BATCH_WAIT_MS, BATCH_WORKERS


class Batcher:
    """Concurrent routing requests go through one queue; `workers` workers each take what is waiting (up to
    `max_queries` queries; under load they wait `wait_s` for more) and answer it with one
    :meth:`Pool.route_batch` in a thread, so the event loop keeps accepting requests meanwhile. With two
    workers (the default) two batches encode at once and the event loop answers one while the other encodes:
    on two cores that keeps both busy under load, where one worker left a third of them idle."""

    def __init__(
        self,
        pool,
        max_queries: int = BATCH_QUERIES,
        wait_s: float = BATCH_WAIT_MS / 1000,
        observe=None,
        workers: int = BATCH_WORKERS,
    ):
        self.pool = pool
        self.observe = observe
        self.max_queries = max(1, int(max_queries))
        self.wait_s = max(0.0, float(wait_s))
        self.n_workers = max(1, int(workers))
        self.queue: asyncio.Queue | None = None
        self.workers: list[asyncio.Task] = []
        # the batches' own threads, as many as workers: the same few threads keep their torch thread pools and
        # memory arenas (the event loop's default executor rotates up to cpu + 4 threads, and memory grew with it)
        self.threads = concurrent.futures.ThreadPoolExecutor(self.n_workers, thread_name_prefix="locus-route")
        self.sizes: list[int] = []  # requests per batch, the latest few (tests and metrics look)

    async def route(self, queries: list[str], models, top_k: int) -> list[inference.Ranking]:
        if not self.workers or any(w.done() for w in self.workers):  # started in the serving loop, on first use
            for w in self.workers:
                w.cancel()
            self.queue = asyncio.Queue()
            loop = asyncio.get_running_loop()
            self.workers = [loop.create_task(self._work()) for _ in range(self.n_workers)]
        future = asyncio.get_running_loop().create_future()
        self.queue.put_nowait((queries, models, top_k, future))
        return await future

    def _drain(self, batch: list, count: int) -> int:
        while count < self.max_queries and not self.queue.empty():
            item = self.queue.get_nowait()
            batch.append(item)
            count += len(item[0])
        return count

    async def _work(self) -> None:
        busy = False
        while True:
            batch = [await self.queue.get()]
            count = self._drain(batch, len(batch[0][0]))
            if self.wait_s and (busy or len(batch) > 1) and count < self.max_queries:
                await asyncio.sleep(self.wait_s)  # only under load: a lone request is not delayed
                count = self._drain(batch, count)
            busy = len(batch) > 1
            self.sizes = [*self.sizes[-99:], len(batch)]
            if self.observe is not None:
                self.observe(len(batch))
            try:
                results = await asyncio.get_running_loop().run_in_executor(
                    self.threads, self.pool.route_batch, [item[:3] for item in batch]
                )
            except Exception as exc:  # noqa: BLE001  (handed to every waiting request)
                results = [exc] * len(batch)
            for item, result in zip(batch, results):
                future = item[3]
                if future.done():  # the client went away
                    continue
                if isinstance(result, BaseException):
                    future.set_exception(result)
                else:
                    future.set_result(result)
