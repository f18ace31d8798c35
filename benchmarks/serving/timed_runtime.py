"""``QuickScorerRuntime`` with its own clock: the thread time (``time.thread_time_ns``) each
request spends in the runtime's decode, in ``Model.predict`` and in building the response,
added up and written to standard error (the server's log) every ``EVERY`` requests as
``TIMED <requests> decode <us> predict <us> encode <us>``, means in microseconds.

``inside.py`` serves it to see what the runtime costs inside a busy server, where its code
and data come back cold after MLServer's own work on each request; ``load.py``'s
``runtime_cost`` times the same steps in a loop in one process. It scores as the runtime
does for the requests the load benchmark sends (one feature tensor, no request parameters,
no ranking).
"""
from __future__ import annotations

import sys
import time

from mlserver import types

from quickscorer.serving import QuickScorerRuntime, _output

EVERY = 1000


class TimedRuntime(QuickScorerRuntime):
    async def load(self) -> bool:
        self.requests = 0
        self.ns = [0, 0, 0]
        return await super().load()

    async def predict(self, payload: types.InferenceRequest) -> types.InferenceResponse:
        clock = time.thread_time_ns
        t0 = clock()
        X, _, _ = self._decode(payload)
        t1 = clock()
        scores = self._model.predict(X, self._raw_score, n_threads=self._threads)
        t2 = clock()
        response = types.InferenceResponse(model_name=self.name, model_version=self.version,
                                           id=payload.id, outputs=[_output("predict", scores)])
        t3 = clock()
        self.requests += 1
        for k, ns in enumerate((t1 - t0, t2 - t1, t3 - t2)):
            self.ns[k] += ns
        if self.requests % EVERY == 0:
            print(self.line(), file=sys.stderr, flush=True)
        return response

    def line(self) -> str:
        d, p, e = (ns / self.requests / 1e3 for ns in self.ns)
        return f"TIMED {self.requests} decode {d:.1f} predict {p:.1f} encode {e:.1f}"
