"""Where the tensors of a training step live when some are offloaded below HBM (layer L4).

Pure placement math over byte counts of one GPU (the engine assembles them from
:mod:`fabricsim.transformer.memory`). Offloading a tensor class keeps, on the GPU, only the
working set the framework streams through; the rest lives on the tier:

* **weights** (ZeRO-Infinity parameter offload, Rajbhandari et al. SC'21; Calculon's
  ``weight_offload``): HBM keeps two layers' 16-bit weights (the layer computing and the one
  being prefetched); the tier keeps the GPU's whole weight store (its ZeRO-3 shard under ZeRO-3).
* **optimizer** (ZeRO-Offload, Ren et al. ATC'21; Megatron-Core ``optimizer_cpu_offload``): the
  tier keeps the fp32 master weights and Adam moments and the fp32 gradient shard the GPU updates;
  HBM keeps no optimizer state. Gradients: with one micro-batch per step they stream out per
  reduction bucket, so HBM keeps two buckets (DeepSpeed's stage-2 offload); with several
  micro-batches they accumulate in HBM first (Megatron-Core keeps its grad buffer on the GPU).
* **activations** (activation offloading, as Calculon's ``activations_offload`` and Megatron-Core's
  fine-grained activation offloading): the stored activations of the in-flight micro-batches
  move to the tier; HBM keeps two layers' worth (one being written out, one prefetched back).

Every HBM figure is ``min(resident, working set)``, so offloading a class never adds HBM bytes.
"""

from __future__ import annotations

from typing import NamedTuple

from fabricsim.specs.memory_tier import OffloadClass, OffloadSpec


class TierBytes(NamedTuple):
    """Bytes by tensor class on one memory tier of one GPU."""

    weights: float
    gradients: float
    optimizer_states: float
    activations: float

    @property
    def total(self) -> float:
        return self.weights + self.gradients + self.optimizer_states + self.activations

    def as_dict(self) -> dict[str, float]:
        return self._asdict()


class ResidentBytes(NamedTuple):
    """What one GPU holds without offload, and the per-layer working sets offload keeps.

    ``resident``: HBM bytes by class with nothing offloaded. ``weight_store_bytes``: the 16-bit
    weights this GPU stores (its shard under ZeRO-3); ``gradient_shard_bytes``: fp32 gradients of
    the parameters whose optimizer state it holds; ``stored_activation_bytes``: activations of the
    in-flight micro-batches that could move (not the logits or a recomputation working set);
    ``layer_weight_bytes``/``layer_activation_bytes``: one layer's gathered weights / one layer's
    stored activations of one micro-batch; ``bucket_gradient_bytes``: one reduction bucket.
    """

    resident: TierBytes
    weight_store_bytes: float
    gradient_shard_bytes: float
    stored_activation_bytes: float
    layer_weight_bytes: float
    layer_activation_bytes: float
    bucket_gradient_bytes: float
    microbatches: int


class ClassShift(NamedTuple):
    """Offloading one class: HBM bytes it frees and tier bytes it takes (independent of the other classes)."""

    hbm_freed: float
    tier_bytes: float


def class_shifts(sizes: ResidentBytes) -> tuple[ClassShift, ClassShift, ClassShift]:
    """(optimizer, weights, activations) shifts, in :data:`fabricsim.specs.OFFLOAD_ORDER`: what each
    class moves is independent of the others, so a set's bytes are sums of these (the planner sizes
    every offload choice of a layout from them)."""
    weights, gradients, optimizer, activations = sizes.resident
    return (
        optimizer_shift(
            gradients, optimizer, sizes.gradient_shard_bytes, sizes.bucket_gradient_bytes, sizes.microbatches
        ),
        weights_shift(weights, sizes.weight_store_bytes, sizes.layer_weight_bytes),
        activations_shift(activations, sizes.stored_activation_bytes, sizes.layer_activation_bytes),
    )


# The three shifts one by one: the planner sizes a block of layouts from them, the optimizer's and
# the weights' once per ZeRO stage and the activations' once per virtual-stage count.


def optimizer_shift(
    gradients: float, optimizer: float, gradient_shard: float, bucket_gradient: float, microbatches: int
) -> ClassShift:
    """Offloading the optimizer (bytes as in :class:`ResidentBytes`)."""
    kept_gradients = min(gradients, 2.0 * bucket_gradient) if microbatches == 1 else gradients
    return ClassShift(optimizer + gradients - kept_gradients, optimizer + gradient_shard)


def weights_shift(weights: float, weight_store: float, layer_weight: float) -> ClassShift:
    """Offloading the weights (bytes as in :class:`ResidentBytes`)."""
    return ClassShift(weights - min(weights, 2.0 * layer_weight), weight_store)


def activations_shift(activations: float, stored_activation: float, layer_activation: float) -> ClassShift:
    """Offloading the activations (bytes as in :class:`ResidentBytes`)."""
    stored = min(stored_activation, activations)
    return ClassShift(stored - min(stored, 2.0 * layer_activation), stored)


def place(sizes: ResidentBytes, offload: OffloadSpec) -> tuple[TierBytes, TierBytes]:
    """(HBM bytes, tier bytes) by class when ``offload``'s classes live on its tier."""
    weights, gradients, optimizer, activations = sizes.resident
    moved_optimizer, moved_weights, moved_activations = class_shifts(sizes)
    tier_weights = tier_gradients = tier_optimizer = tier_activations = 0.0
    classes = offload.classes
    if OffloadClass.WEIGHTS in classes:
        weights -= moved_weights.hbm_freed
        tier_weights = moved_weights.tier_bytes
    if OffloadClass.OPTIMIZER in classes:
        gradients -= moved_optimizer.hbm_freed - optimizer
        tier_optimizer, optimizer = optimizer, 0.0
        tier_gradients = sizes.gradient_shard_bytes
    if OffloadClass.ACTIVATIONS in classes:
        activations -= moved_activations.hbm_freed
        tier_activations = moved_activations.tier_bytes
    return (
        TierBytes(weights, gradients, optimizer, activations),
        TierBytes(tier_weights, tier_gradients, tier_optimizer, tier_activations),
    )
