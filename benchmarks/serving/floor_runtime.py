"""A runtime that scores nothing: the server's own cost per request, for ``load.py``.

It answers every request with zeros of the request's row count, through the same MLServer,
protocols and batching as the runtimes ``load.py`` compares, so the server CPU time a query
costs it is what MLServer itself spends on a request (parsing, decoding the tensor as it
hands it to a runtime, encoding, metrics). A runtime that took no time at all would cost
that much a query; the peer's cost over it bounds any runtime's ratio of queries/s on one
server core.
"""
from __future__ import annotations

from mlserver import MLModel, types


class FloorRuntime(MLModel):
    async def load(self) -> bool:
        return True

    async def predict(self, payload: types.InferenceRequest) -> types.InferenceResponse:
        rows = payload.inputs[0].shape[0]
        return types.InferenceResponse(
            model_name=self.name, id=payload.id,
            outputs=[types.ResponseOutput(name="predict", datatype="FP64", shape=[rows, 1],
                                          data=[0.0] * rows)])
