"""Write a tiny random-weight Mixture-of-Experts model folder that real vLLM (CPU) serves.

    .venv-live/bin/python env/live/tiny_model.py            # -> .cache/tiny-moe
    .venv-live/bin/python env/live/tiny_model.py -o DIR --arch qwen3_moe

The folder holds only ``config.json``, ``generation_config.json``, the tokenizer files and
``rackbook-tiny-model.json`` (what made it): **no weights**. vLLM is started with
``--load-format dummy`` (``LLM(load_format="dummy")``), which fills every weight from a seeded
generator (vLLM's ``initialize_dummy_weights``, seed 1234), so every run of the same vLLM
version computes the same tokens. Nothing here is a trained model: it exists to make real
vLLM servers, schedulers and benchmark clients run on a 2-core CPU.

Choices, each forced by what vLLM on CPU accepts (see env/live/README.md):

* Architecture Qwen3-MoE (``Qwen3MoeForCausalLM``): a served MoE with a router, top-k experts,
  and fused-MoE kernels, like the DeepSeek model of the claims but without MLA's
  kv_lora_rank 512 minimum. ``--arch deepseek_v3`` writes a DeepSeek-V3 (MLA + MoE) config
  instead (kv_lora_rank 512, rope head 64, as the CPU MLA path needs).
* hidden 128, 4 attention heads of head size 32 (CPU attention accepts 32, not 16), 2 layers,
  8 experts, 2 active per token, bf16.
* vocab_size 10240 >= 10000, because ``vllm bench latency`` draws random prompt ids below 10000.
* Tokenizer: byte-level BPE trained here with ``tokenizers`` on pseudo-text generated from
  ``random.Random(0)`` (deterministic: the same bytes every run), saved with ``transformers``.

Run it with the live venv (needs ``tokenizers`` and ``transformers``). It is idempotent: an
existing folder made from the same spec is left alone (``--force`` rewrites it).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_OUT = ROOT / ".cache" / "tiny-moe"
#: Bump when the generator changes what it writes.
GENERATOR_VERSION = 1
VOCAB_SIZE = 10240
SPECIAL_TOKENS = ["<|endoftext|>", "<|pad|>"]
CORPUS_SEED = 0
MAX_MODEL_LEN = 4096  # positions; context-latency sweeps prompts up to 3584 tokens


def corpus(seed: int = CORPUS_SEED, n_words: int = 400_000) -> list[str]:
    """Deterministic pseudo-text: lines of pseudo-words built from syllables, Zipf-like counts.

    Returns lines of text (about 2.5 MB). The same ``seed`` gives the same lines on every
    platform (``random.Random`` is specified to be reproducible).
    """
    rng = random.Random(seed)
    onsets = [
        "",
        "b",
        "c",
        "d",
        "f",
        "g",
        "h",
        "k",
        "l",
        "m",
        "n",
        "p",
        "r",
        "s",
        "t",
        "v",
        "w",
        "z",
        "ch",
        "sh",
        "th",
        "st",
        "tr",
        "pl",
        "gr",
    ]
    nuclei = ["a", "e", "i", "o", "u", "ai", "ea", "ou", "y"]
    codas = ["", "", "n", "r", "s", "t", "l", "m", "ng", "ck"]
    lexicon = []
    seen = set()
    while len(lexicon) < 30_000:
        w = "".join(
            rng.choice(onsets) + rng.choice(nuclei) + rng.choice(codas)
            for _ in range(rng.randint(1, 4))
        )
        if w not in seen:
            seen.add(w)
            lexicon.append(w)
    weights = [1.0 / (rank + 1) for rank in range(len(lexicon))]  # Zipf, exponent 1
    words = rng.choices(lexicon, weights=weights, k=n_words)
    punct = [".", ",", "?", "!", ";", ":"]
    lines, line = [], []
    for i, w in enumerate(words):
        if rng.random() < 0.08:
            w = w.capitalize()
        if rng.random() < 0.05:
            w = f"{w}{rng.choice(punct)}"
        if rng.random() < 0.02:
            w = str(rng.randint(0, 99999))
        line.append(w)
        if len(line) >= 12 or i == len(words) - 1:
            lines.append(" ".join(line))
            line = []
    return lines


def config_for(arch: str) -> dict:
    """The model's ``config.json`` (Hugging Face format) for ``arch``."""
    common = {
        "vocab_size": VOCAB_SIZE,
        "hidden_size": 128,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 4,
        "hidden_act": "silu",
        "max_position_embeddings": MAX_MODEL_LEN,
        "rms_norm_eps": 1e-6,
        "rope_theta": 10000.0,
        "tie_word_embeddings": False,
        "torch_dtype": "bfloat16",
        "bos_token_id": 0,
        "eos_token_id": 0,
        "pad_token_id": 1,
        "initializer_range": 0.02,
        "use_cache": True,
    }
    if arch == "qwen3_moe":
        return {
            **common,
            "architectures": ["Qwen3MoeForCausalLM"],
            "model_type": "qwen3_moe",
            "head_dim": 32,
            "num_key_value_heads": 2,
            "intermediate_size": 256,
            "moe_intermediate_size": 64,
            "num_experts": 8,
            "num_experts_per_tok": 2,
            "decoder_sparse_step": 1,
            "mlp_only_layers": [],
            "norm_topk_prob": True,
            "output_router_logits": False,
            "attention_bias": False,
            "attention_dropout": 0.0,
            "sliding_window": None,
            "use_sliding_window": False,
        }
    if arch == "deepseek_v3":
        return {
            **common,
            "architectures": ["DeepseekV3ForCausalLM"],
            "model_type": "deepseek_v3",
            "intermediate_size": 256,
            "moe_intermediate_size": 64,
            "n_routed_experts": 8,
            "n_shared_experts": 1,
            "num_experts_per_tok": 2,
            "n_group": 1,
            "topk_group": 1,
            "first_k_dense_replace": 0,
            "moe_layer_freq": 1,
            "norm_topk_prob": True,
            "routed_scaling_factor": 1.0,
            "scoring_func": "sigmoid",
            "topk_method": "noaux_tc",
            "q_lora_rank": None,
            "kv_lora_rank": 512,
            "qk_nope_head_dim": 64,
            "qk_rope_head_dim": 64,
            "v_head_dim": 64,
            "attention_bias": False,
            "attention_dropout": 0.0,
            "rope_scaling": None,
        }
    raise SystemExit(f"error: tiny_model.py: --arch: unknown architecture {arch!r}")


def spec(arch: str) -> dict:
    """Everything that determines the folder's content; its hash names the build."""
    return {
        "generator": "env/live/tiny_model.py",
        "generator_version": GENERATOR_VERSION,
        "arch": arch,
        "config": config_for(arch),
        "vocab_size": VOCAB_SIZE,
        "corpus_seed": CORPUS_SEED,
        "weights": "none: load with --load-format dummy (vLLM initialize_dummy_weights, seed 1234)",
    }


def spec_hash(s: dict) -> str:
    return hashlib.sha256(json.dumps(s, sort_keys=True).encode()).hexdigest()[:16]


def train_tokenizer(out: Path) -> int:
    """Train the byte-level BPE and save it (with transformers) into ``out``; return its size."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB_SIZE,
        min_frequency=1,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(corpus(), trainer=trainer)
    size = tok.get_vocab_size()
    if size < 10_000:
        raise SystemExit(f"error: tiny_model.py: tokenizer: vocab {size} < 10000; grow corpus")
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token="<|endoftext|>",
        eos_token="<|endoftext|>",
        unk_token="<|endoftext|>",
        pad_token="<|pad|>",
        model_max_length=MAX_MODEL_LEN,
    )
    fast.save_pretrained(out)
    return size


def build(out: Path, arch: str = "qwen3_moe", force: bool = False) -> Path:
    """Write the model folder at ``out`` (atomically: a temp folder renamed into place)."""
    s = spec(arch)
    stamp = out / "rackbook-tiny-model.json"
    if not force and stamp.exists():
        try:
            if json.loads(stamp.read_text())["spec_hash"] == spec_hash(s):
                print(f"tiny model up to date: {out}")
                return out
        except (ValueError, KeyError):
            pass
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    os.chmod(tmp, 0o755)
    try:
        size = train_tokenizer(tmp)
        (tmp / "config.json").write_text(json.dumps(s["config"], indent=2) + "\n")
        gen = {
            "bos_token_id": 0,
            "eos_token_id": 0,
            "pad_token_id": 1,
            "do_sample": False,
            "temperature": 1.0,
        }
        (tmp / "generation_config.json").write_text(json.dumps(gen, indent=2) + "\n")
        stamp_obj = {
            "spec_hash": spec_hash(s),
            "tokenizer_vocab": size,
            "spec": s,
            "note": "synthetic model for exercising vLLM; random (dummy) weights",
        }
        (tmp / stamp.name).write_text(json.dumps(stamp_obj, indent=2) + "\n")
        if out.exists():
            shutil.rmtree(out)
        os.replace(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    print(f"tiny model written: {out} (arch {arch}, tokenizer vocab {size})")
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("-o", "--output", type=Path, default=DEFAULT_OUT)
    p.add_argument("--arch", choices=["qwen3_moe", "deepseek_v3"], default="qwen3_moe")
    p.add_argument("--force", action="store_true", help="rewrite even if up to date")
    a = p.parse_args(argv)
    build(a.output.resolve(), a.arch, a.force)
    return 0


if __name__ == "__main__":
    sys.exit(main())
