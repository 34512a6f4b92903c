#!/usr/bin/env python
# -*- coding: utf-8 -*-
"""Build, or reuse, the tiny random-weight Llama model the `realvllm` test tier serves.

Run with the vLLM venv's Python (it needs torch, transformers and tokenizers); nothing is
downloaded (HF_HUB_OFFLINE=1). Usage: real-vllm-model.py [DIR]; prints the model directory.

The model is only as large as vLLM's CPU backend accepts: head_dim 64 (hidden 256 / 4 heads;
head_dim 16 is rejected on the first request: "Unsupported CPU attention configuration"),
2 layers, intermediate 512, a byte-level BPE tokenizer of 1024 tokens trained on a few
sentences, bf16. About 4 MB, built in ~10 s. Reused while DIR/.npuops-stamp matches.
"""

import json
import os
import shutil
import sys

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

NAME = "tiny-llama-h256-l2-v1024"
SETTINGS = {
    "hidden_size": 256,
    "intermediate_size": 512,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 4,
    "vocab_size": 1024,
    "max_position_embeddings": 512,
    "torch_dtype": "bfloat16",
    "seed": 19,
    "v": 1,
}
CORPUS = [
    "The quick brown fox jumps over the lazy dog.",
    "vLLM serves large language models with paged attention.",
    "Every worker thread belongs on the CPUs of its device.",
    "An accelerator server runs one inference engine per group of devices.",
    "Hello world, this is a tiny random model for tests.",
]


def build(target):
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    tokenizer = Tokenizer(models.BPE(unk_token=None))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=SETTINGS["vocab_size"],
        special_tokens=["<s>", "</s>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(CORPUS * 20, trainer=trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tokenizer, bos_token="<s>", eos_token="</s>")
    fast.model_max_length = SETTINGS["max_position_embeddings"]

    torch.manual_seed(SETTINGS["seed"])
    config = LlamaConfig(
        vocab_size=SETTINGS["vocab_size"],
        hidden_size=SETTINGS["hidden_size"],
        intermediate_size=SETTINGS["intermediate_size"],
        num_hidden_layers=SETTINGS["num_hidden_layers"],
        num_attention_heads=SETTINGS["num_attention_heads"],
        num_key_value_heads=SETTINGS["num_key_value_heads"],
        max_position_embeddings=SETTINGS["max_position_embeddings"],
        bos_token_id=fast.bos_token_id,
        eos_token_id=fast.eos_token_id,
        tie_word_embeddings=False,
    )
    model = LlamaForCausalLM(config).to(torch.bfloat16)
    partial = target + ".partial"
    shutil.rmtree(partial, ignore_errors=True)
    model.save_pretrained(partial)
    fast.save_pretrained(partial)
    with open(os.path.join(partial, "config.json")) as handle:
        saved = json.load(handle)
    saved["torch_dtype"] = saved["dtype"] = SETTINGS["torch_dtype"]
    with open(os.path.join(partial, "config.json"), "w") as handle:
        json.dump(saved, handle, indent=2, sort_keys=True)
    with open(os.path.join(partial, ".npuops-stamp"), "w") as handle:
        json.dump(SETTINGS, handle, sort_keys=True)
    shutil.rmtree(target, ignore_errors=True)
    os.rename(partial, target)


def main(argv):
    cache = os.environ.get("NPUOPS_CACHE", "/var/cache/npuops")
    target = argv[1] if len(argv) > 1 else os.path.join(cache, "vllm", "models", NAME)
    stamp = os.path.join(target, ".npuops-stamp")
    current = None
    if os.path.isfile(stamp):
        with open(stamp) as handle:
            try:
                current = json.load(handle)
            except ValueError:
                current = None
    if current == SETTINGS:
        sys.stderr.write("real-vllm-model: up to date (%s)\n" % target)
    else:
        os.makedirs(os.path.dirname(os.path.abspath(target)), exist_ok=True)
        build(target)
        sys.stderr.write("real-vllm-model: built %s\n" % target)
    print(target)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
