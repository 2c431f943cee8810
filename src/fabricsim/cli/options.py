"""Every CLI option declared once (layer L11); commands use these as their parameter defaults.

A command forwards its parameters to the API function of the same keywords, where they are
typed and checked once (:mod:`fabricsim.specs.inputs`), so adding an option is one declaration
here (or in the command) plus one typed keyword on the API function. Short names (tp, pp, ...)
are the layout glossary of the README; the layout spec's full names map to them in
:data:`fabricsim.specs.layout.SHORT_NAMES`.
"""

from __future__ import annotations

from typing import Any

import typer

from fabricsim.errors import FabricsimError

JSON = typer.Option(False, "--json", help="Print one JSON object on stdout instead of a table.")
MODEL = typer.Option(..., "--model", help="catalog model name, model YAML or Hugging Face config.json")
SYSTEM = typer.Option(..., "--system", help="catalog system name or YAML path")
GPUS = typer.Option(..., "--gpus", help="number of GPUs")
GLOBAL_BATCH = typer.Option(..., "--global-batch", help="sequences per optimizer step")
SEQ_LEN = typer.Option(..., "--seq-len", help="tokens per sequence")
INPUT_LEN = typer.Option(..., "--input-len", help="prompt tokens per request")
OUTPUT_LEN = typer.Option(..., "--output-len", help="generated tokens per request")
TOP = typer.Option(5, "--top", help="plans to show")
SEED = typer.Option(0, "--seed", help="random seed, 0..2^63-1 (same seed, same output)")

# one parallel layout (train, infer, serve)
TP = typer.Option(None, "--tp", help="tensor-parallel size (default 1; infer: a node's share)")
PP = typer.Option(None, "--pp", help="pipeline-parallel stages (default 1)")
DP = typer.Option(None, "--dp", help="data-parallel size (default gpus/(tp*pp*cp))")
CP = typer.Option(None, "--cp", help="context-parallel size (default 1)")
EP = typer.Option(None, "--ep", help="expert-parallel size (default 1; infer: ep > tp means attention-DP)")
VPP = typer.Option(None, "--vpp", help="model chunks per GPU, interleaved schedule (default 1)")
MICRO_BATCH = typer.Option(None, "--micro-batch", help="sequences per micro-batch (default 1)")
ZERO = typer.Option(None, "--zero", help="ZeRO stage 0|1|2|3 (default 1 for MoE, else 0)")
RECOMPUTE = typer.Option(
    None,
    "--recompute",
    help="none | selective (core_attn) | fine-grained (layernorm, mla_up_proj, moe_act) | full (default none)",
)
SEQUENCE_PARALLEL = typer.Option(
    None, "--sequence-parallel/--no-sequence-parallel", help="sequence parallelism (default on when tp > 1)"
)
TRAIN_DTYPE = typer.Option(None, "--dtype", help="bf16 | fp16 | fp8 | fp4 (NVFP4; default bf16)")
INFER_DTYPE = typer.Option(None, "--dtype", help="weights: bf16 | fp16 | fp8 | fp4 (default bf16)")
KV_DTYPE = typer.Option(None, "--kv-dtype", help="KV cache dtype (default fp8 for fp8/fp4 weights)")
CUDA_GRAPHS = typer.Option(
    True, "--cuda-graphs/--no-cuda-graphs",
    help="decode steps replay CUDA graphs (the TensorRT-LLM/vLLM default) or launch every kernel")

# serving
REQUEST_TRACE = typer.Option(
    None, "--request-trace", help="request file, CSV (header) or JSONL: arrival_s, input_len, output_len per request"
)
_SLO = "a duration, e.g. 2s, 150ms (a bare number is seconds)"
SLO_TTFT_SERVE = typer.Option("2s", "--slo-ttft", help=f"time-to-first-token SLO: {_SLO}")
SLO_TPOT_SERVE = typer.Option("100ms", "--slo-tpot", help=f"time-per-output-token SLO: {_SLO}")
SLO_TTFT = typer.Option(None, "--slo-ttft", help=f"time-to-first-token SLO: {_SLO} (default: none)")
SLO_TPOT = typer.Option(None, "--slo-tpot", help=f"time-per-output-token SLO: {_SLO} (default: none)")

# a search space (plan): one value or a comma-separated list per dimension
_LIST = "one value or a comma-separated list, e.g. 4,8 (default: every valid value)"
TP_LIST = typer.Option(None, "--tp", help=f"tensor-parallel sizes: {_LIST}")
PP_LIST = typer.Option(None, "--pp", help=f"pipeline stages: {_LIST}")
DP_LIST = typer.Option(None, "--dp", help=f"data-parallel sizes: {_LIST}")
CP_LIST = typer.Option(None, "--cp", help=f"context-parallel sizes: {_LIST}")
EP_LIST = typer.Option(None, "--ep", help=f"expert-parallel sizes: {_LIST}")
VPP_LIST = typer.Option(None, "--vpp", help=f"virtual stages per GPU: {_LIST}")
MICRO_BATCH_LIST = typer.Option(None, "--micro-batch", help=f"micro-batch sizes: {_LIST}")
ZERO_LIST = typer.Option(None, "--zero", help=f"ZeRO stages 0-3: {_LIST}")
RECOMPUTE_LIST = typer.Option(None, "--recompute", help=f"none | selective | fine-grained | full: {_LIST}")
SEQUENCE_PARALLEL_BOTH = typer.Option(
    None, "--sequence-parallel/--no-sequence-parallel", help="only with / without (default: both when tp > 1)"
)
TRAIN_DTYPE_LIST = typer.Option(
    None, "--dtype", help="bf16 | fp16 | fp8, comma-separated (default bf16, fp8 where native)"
)

# fidelity and variability (train, infer)
FIDELITY = typer.Option(
    "analytic", "--fidelity", help="analytic | simulate | flow | packet (flow, packet: collectives run on the fabric)"
)
TOPOLOGY = typer.Option(
    None,
    "--topology",
    help="scale-out fabric as a builder string (traffic's syntax, e.g. leaf-spine:leaves=32,spines=8,"
    "hosts_per_leaf=32,oversubscription=4); default the system's own (flow/packet); on tpu-v5p/tpu7x "
    "ocs-torus:4x4x8[,twisted=1] is the job's whole ICI slice (chips = --gpus)",
)
PLACEMENT = typer.Option(
    None, "--placement", help="ranks on hosts: packed | spread | random:SEED | FILE (default packed; flow/packet)"
)
NIC = typer.Option(None, "--nic", help="swap the scale-out NIC, e.g. roce-400g or ib-ndr (flow/packet)")
BACKGROUND = typer.Option(
    None,
    "--background",
    help="another tenant's traffic on the scale-out fabric (never inside a node or NVL72 rack), PATTERN:LOAD "
    "(permutation | all-to-all | incast | websearch, load 0-1; flow/packet)",
)
TRANSPORT = typer.Option(
    None, "--transport", help="the packet transport: roce | ib | uet (default the NIC's; packet fidelity)"
)
BER = typer.Option(None, "--ber", help="post-FEC bit-error rate of every link, e.g. 1e-12 (packet fidelity)")
CC_PARAM = typer.Option(
    None, "--cc-param", help="packet parameter NAME=VALUE, repeatable, as traffic takes them, e.g. classes=2 "
    "and background_class=1: the job's traffic in class 0, --background in class 1 (packet fidelity)"
)
TRACE_OUT = typer.Option(
    None, "--trace", help="write a Chrome/Perfetto trace JSON of the step (replaces only a regular file)"
)
SEEDS = typer.Option(None, "--seeds", help="Monte-Carlo runs with variability (default 20)")
STRAGGLER = typer.Option(None, "--straggler", help="FRACTION:SLOWDOWN, e.g. 0.01:0.2")
JITTER = typer.Option(0.0, "--jitter", help="per-kernel time jitter sigma (fraction, half-normal)")
LINK_JITTER = typer.Option(0.0, "--link-jitter", help="per-transfer jitter sigma (fraction)")
ECMP_REHASH = typer.Option(False, "--ecmp-rehash", help="re-draw ECMP hashes every run (flow fidelity)")

SIMULATION_KEYS = ("fidelity", "trace", "seeds", "straggler", "jitter", "link_jitter", "ecmp_rehash", "seed")
FABRIC_KEYS = ("topology", "placement", "nic", "background")
PACKET_KEYS = ("transport", "ber", "cc_params")
"""The parameter names of the fidelity/variability options above (not forwarded as layout keywords)."""


def split(params: dict[str, Any], *keys: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the parameters named in ``keys``, the rest): a command's ``locals()`` into what goes where."""
    chosen = {key: params[key] for key in keys if key in params}
    rest = {key: value for key, value in params.items() if key not in chosen}
    return chosen, rest


def int_list(name: str, text: str | None) -> list[int] | list[str] | None:
    """``"4,8"`` -> [4, 8]; None stays None; non-integers stay text (the API edge names them)."""
    if text is None:
        return None
    parts = [part.strip() for part in text.split(",")]
    if not any(parts):
        raise FabricsimError(name.replace("_", "-"), "is empty", "give one value or a comma-separated list")
    try:
        return [int(part) for part in parts]
    except ValueError:
        return parts


def str_list(name: str, text: str | None) -> list[str] | None:
    """``"bf16,fp8"`` -> ["bf16", "fp8"]; None stays None; an empty list is refused (not read as "all")."""
    if text is None:
        return None
    parts = [part.strip() for part in text.split(",") if part.strip()]
    if not parts:
        raise FabricsimError(name.replace("_", "-"), "is empty", "give one value or a comma-separated list")
    return parts
