# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Write a tiny causal language model that SGLang can serve on a CPU, without any hub access.

    HF_HUB_OFFLINE=1 <sglang-venv>/bin/python tools/engine/make_tiny_model.py OUTDIR [--arch llama|qwen3]

The weights are random (fixed seed) and the byte-level BPE tokenizer is trained here on a
small built-in corpus, with a ChatML-style chat template, so /generate and /v1/chat/completions
both work. Its answers are gibberish, but always the same gibberish: two runs write
byte-identical files. About 140k parameters in bfloat16, vocabulary 512, context 2048.

    ... make_tiny_model.py OUTDIR --size-mib 2048

writes a model of at least that many MiB of weights instead (wider layers, as many as it takes: about 120 MiB a
layer), for measuring what loading weights costs (the restart benchmark); still gibberish, slower per token.

    ... make_tiny_model.py OUTDIR --seed 2

draws the weights from another seed: the same tokenizer, configuration and tensor shapes, other values, so other
answers. Two such directories are two revisions of one model (what an in-place weight swap loads).

Needs torch, tokenizers and transformers, i.e. the venv made by install_sglang_venv.sh.
"""

from __future__ import annotations

import argparse
import os
import sys

# Never reach for a hub: everything below is built locally.
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ["HF_HUB_DISABLE_TELEMETRY"] = "1"
os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] = "1"

SEED = 20260
VOCAB_SIZE = 512
CONTEXT = 2048
SPECIAL_TOKENS = ["<unk>", "<s>", "</s>", "<|im_start|>", "<|im_end|>"]
CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n"
    "{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)

_SENTENCES = [
    "An inference server loads a model, opens a port and answers requests.",
    "The health endpoint says 503 while the server warms up and 200 once it is ready.",
    "Ansible writes a systemd unit, starts the service and waits until it is healthy.",
    "If the new configuration fails, the role restores the last good one.",
    "system: you are a helpful assistant. user: say hello. assistant: hello there!",
    "Speculative decoding drafts several tokens and verifies them in one step.",
    "Tokens per second, time to first token and the number of running requests.",
    "The quick brown fox jumps over the lazy dog; 0123456789 and punctuation ,.;:!?()[]{}",
]


def corpus():
    """Deterministic training text for the tokenizer."""
    lines = []
    for repeat in range(40):
        for index, sentence in enumerate(_SENTENCES):
            lines.append("%s (%d.%d)" % (sentence, repeat, index))
    lines.append(" ".join(str(number) for number in range(256)))
    return lines


def build_tokenizer():
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    backend = Tokenizer(models.BPE(unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB_SIZE,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    backend.train_from_iterator(corpus(), trainer=trainer)
    bos_id = backend.token_to_id("<s>")
    backend.post_processor = processors.TemplateProcessing(
        single="<s> $A", pair="<s> $A <s> $B", special_tokens=[("<s>", bos_id)])
    return PreTrainedTokenizerFast(
        tokenizer_object=backend,
        bos_token="<s>",
        eos_token="</s>",
        unk_token="<unk>",
        pad_token="</s>",
        chat_template=CHAT_TEMPLATE,
        model_max_length=CONTEXT,
    )


# the wide shape of --size-mib: hidden 2048, 16 heads of 128 (4 KV heads), MLP 8192
WIDE = dict(hidden_size=2048, intermediate_size=8192, num_attention_heads=16, num_key_value_heads=4, head_dim=128)


def wide_layers(size_mib):
    """Layers of the WIDE shape for at least ``size_mib`` MiB of bfloat16 weights (embeddings and norms included)."""
    hidden, mlp, kv = WIDE["hidden_size"], WIDE["intermediate_size"], WIDE["num_key_value_heads"] * WIDE["head_dim"]
    per_layer = 2 * hidden * hidden + 2 * hidden * kv + 3 * hidden * mlp + 2 * hidden
    fixed = 2 * VOCAB_SIZE * hidden + hidden
    return max(1, -(-(size_mib * 2 ** 20 // 2 - fixed) // per_layer))


def build_model(arch, tokenizer, size_mib=0, seed=SEED):
    import torch
    from transformers import GenerationConfig

    shape = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                 num_key_value_heads=2, head_dim=16)
    if size_mib:
        shape = dict(WIDE, num_hidden_layers=wide_layers(size_mib))
    common = dict(
        shape,
        vocab_size=len(tokenizer),
        max_position_embeddings=CONTEXT,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        tie_word_embeddings=False,
        torch_dtype="bfloat16",
    )
    if arch == "llama":
        from transformers import LlamaConfig as Config, LlamaForCausalLM as Model
    else:
        from transformers import Qwen3Config as Config, Qwen3ForCausalLM as Model

    torch.manual_seed(seed)
    model = Model(Config(**common)).to(torch.bfloat16).eval()
    generation = GenerationConfig(
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    return model, generation


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("outdir", help="directory to write the model into (created if missing)")
    parser.add_argument("--arch", choices=("llama", "qwen3"), default="llama", help="model architecture (default llama)")
    parser.add_argument("--size-mib", type=int, default=0,
                        help="at least this many MiB of weights (wide layers); default: the tiny model")
    parser.add_argument("--seed", type=int, default=SEED,
                        help="seed of the random weights (default %d); another seed gives another revision of the same "
                             "model: same files but model.safetensors, other answers" % SEED)
    args = parser.parse_args(argv)
    if args.size_mib < 0:
        parser.error("--size-mib must be 0 (the tiny model) or a positive number of MiB")

    try:
        import torch
    except ImportError as exc:
        parser.error("torch/transformers are missing (%s): run this with the SGLang venv's python" % exc)
    torch.use_deterministic_algorithms(True)

    os.makedirs(args.outdir, exist_ok=True)
    tokenizer = build_tokenizer()
    tokenizer.save_pretrained(args.outdir)
    model, generation = build_model(args.arch, tokenizer, args.size_mib, args.seed)
    model.save_pretrained(args.outdir)
    generation.save_pretrained(args.outdir)
    # safetensors writes 0600; make every file readable so a service user can load a copied model.
    for name in os.listdir(args.outdir):
        path = os.path.join(args.outdir, name)
        if os.path.isfile(path):
            os.chmod(path, 0o644)
    params = sum(parameter.numel() for parameter in model.parameters())
    print("wrote %s model to %s: %d parameters, vocabulary %d" % (args.arch, args.outdir, params, len(tokenizer)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
