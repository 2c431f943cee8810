"""Framework-setting options shared by ``fabricsim train`` and ``plan train`` (layer L11).

Defaults follow current Megatron-Core (megatron/training/arguments.py): every overlap is opt-in,
the attention backend picks a fused (flash) kernel, the FP8 recipe is ``delayed``, expert TP equals
TP. ``plan train`` treats an overlap left unset as free to choose (the planner picks it).
"""

from __future__ import annotations

import typer

_FREE = " plan train: unset = free, chosen on (never slower in this model)."

EXPERT_TP_OPTION = typer.Option(
    None,
    "--expert-tp",
    help="expert tensor-parallel size (Megatron-Core default: tp; 1 where ep x tp exceeds tp x cp x dp)",
)
EXPERT_TP_LIST_OPTION = typer.Option(
    None, "--expert-tp", help="expert tensor-parallel sizes, one value or a comma-separated list (default 1 and tp)"
)
FLASH_OPTION = typer.Option(
    None,
    "--flash-attention/--no-flash-attention",
    help="fused attention kernel (default on, Megatron-Core --attention-backend auto)",
)
GRAD_OPTION = typer.Option(
    None,
    "--overlap-grad-reduce/--no-overlap-grad-reduce",
    help="DP gradient reduce under backward (default off, as Megatron-Core)." + _FREE,
)
PARAM_OPTION = typer.Option(
    None,
    "--overlap-param-gather/--no-overlap-param-gather",
    help="ZeRO parameter all-gather under forward (default off, as Megatron-Core)." + _FREE,
)
TP_COMM_OPTION = typer.Option(
    None,
    "--tp-comm-overlap/--no-tp-comm-overlap",
    help="TP collectives under GEMMs (default off, as Megatron-Core)." + _FREE,
)
A2A_OPTION = typer.Option(
    None,
    "--a2a-overlap/--no-a2a-overlap",
    help="EP all-to-all under the other micro-batch's compute (default off, as Megatron-Core "
    "--overlap-moe-expert-parallel-comm)." + _FREE,
)
FP8_RECIPE_OPTION = typer.Option(
    None,
    "--fp8-recipe",
    help="delayed | current | block | mxfp8 (--dtype fp8), nvfp4 (--dtype fp4); default delayed, as Megatron-Core",
)
CAPACITY_OPTION = typer.Option(
    None, "--capacity-factor", help="MoE token drop: pad experts to this x the mean load (default dropless)"
)


DISPATCHER_OPTION = typer.Option(
    None, "--moe-dispatcher", help="alltoall | deepep: MoE token dispatch (default alltoall, as Megatron-Core)"
)

CROSS_ENTROPY_OPTION = typer.Option(
    None,
    "--cross-entropy",
    help="unfused | native | te: loss kernels (default unfused, as Megatron-Core without "
    "--cross-entropy-loss-fusion; te: --cross-entropy-fusion-impl te)",
)
LORA_OPTION = typer.Option(
    None,
    "--lora-rank",
    help="LoRA fine-tuning: adapters of this rank on the attention projections, every base weight frozen "
    "(no weight gradients, optimizer over the adapters only; default 0: every weight trains)",
)
MTP_OPTION = typer.Option(
    None,
    "--mtp-layers",
    help="multi-token prediction depth on the last stage (default 0, as Megatron-Core --mtp-num-layers; "
    "DeepSeek-V3 recipes use 1)",
)
SPLIT_EMBEDDING_OPTION = typer.Option(
    None,
    "--account-for-embedding-in-pipeline-split/--no-account-for-embedding-in-pipeline-split",
    help="count the embedding as a layer when splitting layers over pp x vpp chunks (default off, as Megatron-Core)",
)
SPLIT_LOSS_OPTION = typer.Option(
    None,
    "--account-for-loss-in-pipeline-split/--no-account-for-loss-in-pipeline-split",
    help="count the output layer and loss as a layer when splitting layers over pp x vpp chunks (default off)",
)
GRAD_FP32_OPTION = typer.Option(
    None,
    "--grad-reduce-in-fp32/--no-grad-reduce-in-fp32",
    help="keep and reduce data-parallel gradients in fp32 (default: on for bf16/fp8/fp4, off for fp16 runs, "
    "as Megatron-Core; off = --grad-reduce-in-bf16)",
)
PIPELINE_LAYOUT_OPTION = typer.Option(
    None,
    "--pipeline-layout",
    help="explicit layer placement over the pp x vpp chunks, Megatron-Core --pipeline-model-parallel-layout "
    "(E embedding, t layer, m MTP layer, L loss, | between chunks, (...)*n repeats; e.g. 'Et|(tt|)*30mL'; "
    "default: equal chunks)",
)
RECOMPUTE_MODULES_OPTION = typer.Option(
    None,
    "--recompute-modules",
    help="what --recompute selective rebuilds, comma-separated: core_attn, layernorm, mla_up_proj, moe_act, mlp "
    "(dense layers), shared_experts (default core_attn, as Megatron-Core --recompute-modules)",
)
