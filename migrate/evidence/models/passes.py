"""The tiny models built and run, in a worker or a test: random weights from ``zoo``'s configs, seeded inputs, and one
pass in a mode (inference, or a training step), under CPU autocast where the mode asks for it.

Importing this module imports torch and transformers: the parent never does (``zoo`` names the models).
"""

from __future__ import annotations

from typing import Any

import torch
import transformers

from migrate.evidence.models.zoo import BATCH, SEQUENCE, VOCABULARY, Architecture, Mode


def build(arch: Architecture) -> Any:
    """The model, random weights from its config, seeded, with its attention implementation."""
    torch.manual_seed(0)
    config = getattr(transformers, arch.config)(**dict(arch.settings))
    config._attn_implementation = arch.attention
    for sub in ("text_config", "vision_config"):
        if hasattr(config, sub):
            getattr(config, sub)._attn_implementation = arch.attention
    return getattr(transformers, arch.model)(config)


def _tokens(length: int = SEQUENCE, high: int = VOCABULARY) -> Any:
    return torch.randint(3, high, (BATCH, length))


def _inputs(kind: str) -> dict[str, Any]:
    if kind == "tokens":
        return {"input_ids": _tokens(), "labels": _tokens()}
    if kind == "seq2seq":
        return {"input_ids": _tokens(), "labels": _tokens(SEQUENCE // 2)}
    if kind == "image":
        return {"pixel_values": torch.randn(BATCH, 3, 16, 16), "labels": torch.tensor([0, 2])}
    if kind == "features":
        return {"input_features": torch.randn(BATCH, 8, 16), "labels": _tokens(SEQUENCE // 2)}
    if kind == "waveform":
        return {"input_values": torch.randn(BATCH, 400), "labels": torch.randint(1, 16, (BATCH, 4))}
    if kind == "clip":
        return {"input_ids": _tokens(), "pixel_values": torch.randn(BATCH, 3, 16, 16), "return_loss": True}
    raise ValueError(f"no inputs of kind {kind!r}")


def inputs(arch: Architecture, mode: Mode) -> dict[str, Any]:
    """Seeded inputs, floating ones in the weights' dtype (a half model is fed half features)."""
    torch.manual_seed(1)
    weights = getattr(torch, mode.weights)
    return {k: v.to(weights) if isinstance(v, torch.Tensor) and v.is_floating_point() else v for k, v in _inputs(arch.inputs).items()}


def run_pass(model: Any, mode: Mode, given: dict[str, Any], training: bool) -> None:
    """One pass of a model already in the mode's weights dtype on inputs made beforehand (``inputs``: not recorded):
    inference (eval, no grad), or a training step (train mode, the loss, backward), under autocast where the mode
    asks for it."""
    autocast = torch.autocast("cpu", dtype=getattr(torch, mode.autocast)) if mode.autocast else torch.autocast("cpu", enabled=False)
    if not training:
        model.eval()
        with torch.no_grad(), autocast:
            model(**given)
        return
    model.train()
    model.zero_grad(set_to_none=True)
    with autocast:
        loss = model(**given).loss
    loss.backward()
