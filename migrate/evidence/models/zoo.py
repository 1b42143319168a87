"""The tiny models the ``models`` source runs: transformers architectures built from configs (random weights, nothing
downloaded), each small enough that every mode of every one records in seconds on one core.

They are chosen for what users export that OpInfo's samples never call: the mixed-precision kernels of a training
step (a bfloat16 ``grad_out`` beside ``native_layer_norm``'s float32 statistics, flash attention's float32
``logsumexp`` beside half activations), each normalisation (LayerNorm, RMSNorm, BatchNorm, GroupNorm), convolutions
of one, two and grouped dimensions, embeddings, both attention implementations (eager and sdpa) and the losses
(cross-entropy, CTC, the contrastive loss). docs/evidence.md, "Models", says which architecture covers what.

Importing this module imports neither torch nor transformers: the parent reads the names; a worker builds and runs
the models (``migrate.evidence.models.passes``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

SEQUENCE = 8  # tokens per text sample; a decoder's labels are half as long
BATCH = 2
VOCABULARY = 64
_TINY = (("hidden_size", 32), ("num_hidden_layers", 2), ("num_attention_heads", 2), ("intermediate_size", 64))
_SEQ2SEQ = (
    ("vocab_size", VOCABULARY), ("d_model", 32), ("encoder_layers", 2), ("decoder_layers", 2), ("encoder_attention_heads", 2),
    ("decoder_attention_heads", 2), ("encoder_ffn_dim", 64), ("decoder_ffn_dim", 64),
)  # fmt: skip


@dataclass(frozen=True)
class Architecture:
    """One tiny model: its transformers classes by name, its config's settings, its inputs, what it covers."""

    name: str
    domain: str  # text, vision, audio, encoder-decoder, multimodal
    model: str  # the transformers class, e.g. 'BertForMaskedLM'
    config: str  # its config class
    settings: tuple[tuple[str, Any], ...]
    inputs: str  # a key of INPUTS
    attention: str  # 'eager' or 'sdpa': the attention implementation it runs
    covers: str  # what it adds to the others, for the docs


ARCHITECTURES = (
    Architecture("bert", "text", "BertForMaskedLM", "BertConfig", (("vocab_size", VOCABULARY), ("max_position_embeddings", 32), *_TINY),
                 "tokens", "eager", "LayerNorm, GELU, token-type and position embeddings, masked-LM cross-entropy"),
    Architecture("gpt2", "text", "GPT2LMHeadModel", "GPT2Config",
                 (("vocab_size", VOCABULARY), ("n_positions", 32), ("n_embd", 32), ("n_layer", 2), ("n_head", 2)),
                 "tokens", "sdpa", "Conv1D (addmm) projections, causal sdpa, tanh GELU, shifted causal-LM loss"),
    Architecture("llama", "text", "LlamaForCausalLM", "LlamaConfig", (("vocab_size", VOCABULARY), ("max_position_embeddings", 32), ("num_key_value_heads", 1), *_TINY),
                 "tokens", "sdpa", "RMSNorm, rotary embeddings, grouped-query attention, SiLU gating"),
    Architecture("mixtral", "text", "MixtralForCausalLM", "MixtralConfig",
                 (("vocab_size", VOCABULARY), ("max_position_embeddings", 32), ("num_key_value_heads", 1), ("num_local_experts", 4), ("num_experts_per_tok", 2), *_TINY),
                 "tokens", "eager", "mixture of experts: top-k routing, index_add/scatter of expert outputs, eager attention"),
    Architecture("t5", "encoder-decoder", "T5ForConditionalGeneration", "T5Config",
                 (("vocab_size", VOCABULARY), ("d_model", 32), ("d_kv", 16), ("d_ff", 64), ("num_layers", 2), ("num_heads", 2), ("decoder_start_token_id", 0), ("pad_token_id", 0)),
                 "seq2seq", "eager", "T5's RMS LayerNorm, relative position buckets, cross-attention"),
    Architecture("bart", "encoder-decoder", "BartForConditionalGeneration", "BartConfig", (*_SEQ2SEQ, ("max_position_embeddings", 32)),
                 "seq2seq", "sdpa", "learned positions, encoder-decoder sdpa with cross-attention"),
    Architecture("vit", "vision", "ViTForImageClassification", "ViTConfig", (("image_size", 16), ("patch_size", 8), ("num_labels", 3), *_TINY),
                 "image", "sdpa", "patch Conv2d, CLS token, sdpa without a mask"),
    Architecture("resnet", "vision", "ResNetForImageClassification", "ResNetConfig",
                 (("embedding_size", 8), ("hidden_sizes", [8, 16]), ("depths", [1, 1]), ("num_labels", 3)),
                 "image", "eager", "Conv2d, BatchNorm in training (running statistics), max-pool, adaptive average pool"),
    Architecture("convnext", "vision", "ConvNextForImageClassification", "ConvNextConfig",
                 (("num_stages", 2), ("hidden_sizes", [8, 16]), ("depths", [1, 1]), ("num_labels", 3)),
                 "image", "eager", "depthwise Conv2d, channels-last LayerNorm, layer scale"),
    Architecture("whisper", "audio", "WhisperForConditionalGeneration", "WhisperConfig",
                 (*_SEQ2SEQ, ("num_mel_bins", 8), ("max_source_positions", 8), ("max_target_positions", 16), ("pad_token_id", 0),
                  ("bos_token_id", 1), ("eos_token_id", 2), ("decoder_start_token_id", 1)),
                 "features", "sdpa", "Conv1d over log-mel features, sinusoidal positions, an audio encoder-decoder"),
    Architecture("wav2vec2", "audio", "Wav2Vec2ForCTC", "Wav2Vec2Config",
                 (("vocab_size", 16), ("conv_dim", (8, 8)), ("conv_kernel", (4, 3)), ("conv_stride", (2, 2)), ("num_conv_pos_embeddings", 4),
                  ("num_conv_pos_embedding_groups", 2), ("feat_extract_norm", "group"), *_TINY),
                 "waveform", "eager", "GroupNorm, grouped Conv1d positions, weight norm, CTC loss"),
    Architecture("clip", "multimodal", "CLIPModel", "CLIPConfig",
                 (("text_config", {"vocab_size": VOCABULARY, "max_position_embeddings": 16, **dict(_TINY)}),
                  ("vision_config", {"image_size": 16, "patch_size": 8, **dict(_TINY)}), ("projection_dim", 16)),
                 "clip", "sdpa", "quick GELU, L2 normalisation, the contrastive loss of two towers"),
)  # fmt: skip


@dataclass(frozen=True)
class Mode:
    """How one pass runs: the weights' dtype, and the autocast dtype (none: autocast off)."""

    name: str
    weights: str  # 'float32', 'bfloat16', 'float16'
    autocast: str = ""

    @property
    def compute(self) -> str:
        """The dtype it computes in (the sample dtype its calls are recorded under)."""
        return self.autocast or self.weights


MODES = (
    Mode("float32", "float32"),
    Mode("bfloat16", "bfloat16"),
    Mode("float16", "float16"),
    Mode("autocast-bfloat16", "float32", "bfloat16"),
    Mode("autocast-float16", "float32", "float16"),
)
PASSES = ("inference", "training")  # eval under no_grad; a training step: forward in train mode, the loss, backward


def architecture(name: str) -> Architecture:
    return next(a for a in ARCHITECTURES if a.name == name)
