#!/usr/bin/env python3
"""Greedy tokens of tach's bf16-weight decoding against its reference, on the same prompt.

tach: `tach generate --dtype bf16` where oneDNN has no bf16 GEMM (an AVX2 CPU, or any CPU with
DNNL_MAX_CPU_ISA=AVX2, which this script sets): the weights stored in bf16, the arithmetic f32.
Reference: transformers with the model's weights rounded to bf16 and cast back to f32
(model.to(bfloat16).to(float32)), greedy generate. Prints both token lists and how many agree.

    ~/tach-ref/bin/python scripts/peers/bf16_weights_reference.py build/golden/qwen2.5-0.5b-random-f32
"""
import json
import os
import subprocess
import sys

import numpy as np
import torch
import transformers as tf


def main():
    path = sys.argv[1]
    tach = sys.argv[2] if len(sys.argv) > 2 else "build/tach"
    new = 32
    prompt = [int(i) for i in np.random.default_rng(0).integers(0, 151643, size=32)]
    torch.set_num_threads(os.cpu_count())
    model = tf.AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32).eval()
    model = model.to(torch.bfloat16).to(torch.float32)
    with torch.no_grad():
        ref = model.generate(torch.tensor([prompt]), max_new_tokens=new, min_new_tokens=new, do_sample=False)[0, 32:]
    env = dict(os.environ, DNNL_MAX_CPU_ISA="AVX2")
    out = subprocess.run([tach, "generate", "-m", path, "--ids", " ".join(map(str, prompt)), "-n", str(new),
                          "--ignore-eos", "--json", "--dtype", "bf16", "--warmup", "0"], env=env, check=True,
                         capture_output=True, text=True)
    got = json.loads(out.stdout)["tokens"][0]
    print("tach, bf16 weights widened (DNNL_MAX_CPU_ISA=AVX2):", got)
    print("transformers, weights rounded to bf16, f32 arithmetic:", ref.tolist())
    print(f"equal: {sum(a == b for a, b in zip(got, ref.tolist()))} of {new}")


if __name__ == "__main__":
    sys.exit(main())
