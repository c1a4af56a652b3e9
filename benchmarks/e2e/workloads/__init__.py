"""The end-to-end workloads, by name: how to build each model with random weights, its inputs,
and one inference forward.

Each workload module defines `build(device, dtype, tiny=False, layers=None) -> (model,
make_inputs)` and `forward(model, inputs) -> Tensor`; `reset(inputs)`, when a workload has one,
gives the inputs of one call from the stored ones outside the timed region (decode: a fresh copy
of the prefilled KV cache, so that every timed step sees the same state). `tolerance` bounds
max|plugin - eager| / max|eager| over the output.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from typing import Callable

import torch


@dataclass(frozen=True)
class Workload:
    name: str
    summary: str              # what is built, at which sizes (the report's header)
    dtype: torch.dtype        # on CUDA; CPU runs use float32 unless told otherwise
    build: Callable
    forward: Callable
    tolerance: float
    reset: Callable | None = None
    requires: tuple[str, ...] = ()   # modules the workload imports (torchvision, transformers)

    def missing(self) -> list[str]:
        return [m for m in self.requires if importlib.util.find_spec(m) is None]


def _registry() -> dict[str, Workload]:
    from . import llm, mmdit, resnet50, vae

    return {w.name: w for w in (resnet50.WORKLOAD, mmdit.WORKLOAD, vae.WORKLOAD, *llm.WORKLOADS)}


def names() -> list[str]:
    return list(_registry())


def get(name: str) -> Workload:
    reg = _registry()
    if name not in reg:
        raise KeyError(f"unknown workload {name!r}; known: {', '.join(reg)}")
    return reg[name]
