#!/usr/bin/env python3
"""NF4 references from bitsandbytes (its CPU backend): what tach's QLoRA quantizer must match bit for bit.

    scripts/golden/make_nf4_fixtures.py tests/fixtures/nf4

Writes cases.safetensors: for each case NAME, NAME.w (the f32 input), and what
bitsandbytes.functional.quantize_4bit(w, blocksize=64, quant_type="nf4", compress_statistics=True)
and dequantize_4bit give: NAME.codes (u8, two 4-bit codes per byte, the first in the high nibble),
NAME.qabsmax (u8: the absmax of each 64-block, minus their mean, 8-bit blockwise-quantized in
blocks of 256), NAME.absmax2 (f32, one per 256 absmax values), NAME.offset (f32 [1], that mean),
NAME.code2 (f32 [256], the 8-bit dynamic code book), NAME.nf4 (f32 [16], the NF4 code book) and
NAME.dequant (f32, the dequantized weight). Development only: run with the virtualenv that has
torch and bitsandbytes.
"""
import os
import sys

import bitsandbytes
import bitsandbytes.functional as F
import torch
from bitsandbytes.backends.default.ops import _dequantize_4bit_compute
from bitsandbytes.backends.utils import _get_4bit_code
from safetensors.torch import save_file


def portable_dequantize_4bit(A, absmax, blocksize, quant_type, shape, dtype):
    """bitsandbytes' portable (PyTorch) NF4 dequantization, which its CPU kernel falls back to.

    The native CPU kernel of bitsandbytes 0.50.2 (the AVX512 branch of dequantizeBlockwise4bitCpu)
    scales element (row, col) by absmax[row * (cols / 64) + col / 64] when cols is a multiple of 16,
    as if every row were whole 64-blocks: wrong at widths 16, 32, 48, 80, ..., where the narrow
    cases below would record it. Its codes and absmax values are right.
    """
    if A.dtype != torch.uint8:
        A = A.view(torch.uint8)
    return _dequantize_4bit_compute(A.reshape(-1), absmax, _get_4bit_code(quant_type, A.device), blocksize, shape,
                                    dtype)


torch.library.register_kernel("bitsandbytes::dequantize_4bit", "cpu", portable_dequantize_4bit)


def cases():
    g = torch.Generator().manual_seed(0)
    yield "normal", torch.randn(64, 128, generator=g) * 0.05
    w = torch.randn(48, 256, generator=g) * 0.02
    w[3, 7] = 0.9      # an outlier: its block's absmax
    w[10, 64:128] = 0  # an all-zero block
    w[20, 5] = -1.5    # a negative absmax
    yield "outliers", w
    # a weight that came from a bf16 checkpoint
    yield "from_bf16", (torch.randn(128, 64, generator=g) * 0.1).to(torch.bfloat16).float()
    # more than 256 blocks: several absmax2 blocks, the last one partial
    yield "many_blocks", torch.randn(260, 64, generator=g) * 0.03
    # rows narrower than a block, or not a whole number of blocks: 64-blocks span rows (the
    # shapes of small models' q/k/v, FFN and pooler weights)
    yield "width16", torch.randn(40, 16, generator=g) * 0.3
    yield "width32", torch.randn(24, 32, generator=g) * 0.3
    yield "width40", torch.randn(16, 40, generator=g) * 0.3
    yield "width80", torch.randn(24, 80, generator=g) * 0.3


def main(out_dir):
    tensors = {}
    for name, w in cases():
        q, st = F.quantize_4bit(w, blocksize=64, quant_type="nf4", compress_statistics=True)
        d = F.dequantize_4bit(q, st)
        tensors[name + ".w"] = w.contiguous()
        tensors[name + ".codes"] = q.reshape(-1).contiguous()
        tensors[name + ".qabsmax"] = st.absmax.contiguous()
        tensors[name + ".absmax2"] = st.state2.absmax.float().contiguous()
        tensors[name + ".offset"] = st.offset.reshape(1).float().contiguous()
        tensors[name + ".code2"] = st.state2.code.float().contiguous()
        tensors[name + ".nf4"] = st.code.float().contiguous()
        tensors[name + ".dequant"] = d.float().contiguous()
    save_file(tensors, os.path.join(out_dir, "cases.safetensors"),
              metadata={"bitsandbytes": bitsandbytes.__version__, "torch": torch.__version__})
    print("wrote", os.path.join(out_dir, "cases.safetensors"), "bitsandbytes", bitsandbytes.__version__)


if __name__ == "__main__":
    main(sys.argv[1])
