"""The ONNX export the onnxruntime engine runs: transformers' model traced by torch.onnx's
TorchScript exporter (opset 17) on an example batch, then checked in ONNX Runtime on a batch of
another shape before it is kept.

The trace runs one forward, so the example must be a batch the model can run, and one that takes
the paths real batches take:
- segment ids of 0: every family with token types has at least one, RoBERTa and XLM-R only one, so
  a segment id of 1 is past their table (the IndexError that a batch of ones, segment ids
  included, gave their export);
- token ids that are no special token, the pad id above all (RoBERTa's and XLM-R's position ids
  count the tokens that are not the pad id);
- a padded row, so the attention mask is traced as a mask, not as "every token attends";
- a batch and a length that are neither 1 nor equal, so that a dimension the trace keeps as a
  constant cannot pass for a dynamic one. The check on a batch of another shape catches one.

An export that fails, or whose outputs differ from transformers' on the check batch, is refused
by name: the family, the head and the exporter's error in one line (its traceback goes to the
worker's log)."""
import os
import sys
import traceback

from ._errors import is_out_of_memory, unsupported
from .torch_engine import TASKS

# A recipe version in the cache key: exports and refusals of an earlier recipe (one that traced a
# batch of ones; one that refused a classifier without a pad id) are made again rather than reused.
RECIPE = 3
OPSET = 17
EXAMPLE_SHAPE = (2, 8)  # [batch, length] the trace runs
CHECK_SHAPE = (3, 5)    # [batch, length] ONNX Runtime's outputs are compared with transformers' on
CHECK_TOLERANCE = 2e-3  # times the largest output (at least 1): tach's own f32 tolerance


def input_names(model):
    """The inputs the export takes: the token ids, the attention mask, and the segment ids where
    the model's forward has them."""
    import inspect
    accepted = inspect.signature(model.forward).parameters
    return ["input_ids", "attention_mask"] + (["token_type_ids"] if "token_type_ids" in accepted else [])


def ordinary_token_ids(config, count):
    """`count` token ids of the vocabulary that are no special token (pad, bos, eos, sep, cls,
    mask, unk where the config names them), cycled when the vocabulary has fewer."""
    special = set()
    for key in ("pad_token_id", "bos_token_id", "eos_token_id", "sep_token_id", "cls_token_id", "mask_token_id",
                "unk_token_id", "decoder_start_token_id"):
        value = getattr(config, key, None)
        for v in value if isinstance(value, (list, tuple)) else [value]:
            if isinstance(v, int):
                special.add(v)
    vocab = getattr(config, "vocab_size", None) or 2 ** 15
    ordinary = [i for i in range(min(vocab, count + len(special) + 8)) if i not in special] or [0]
    return [ordinary[(7 * k + 3) % len(ordinary)] for k in range(count)]


def batch_inputs(torch, config, names, shape):
    """The named int64 inputs [batch, length]: ordinary ids, the last row padded at its end (a
    third of its tokens masked, at least one) when there are several rows, segment ids 0. The
    length is cut to what the model's positions hold (RoBERTa's and MPNet's start after the pad
    id's, so 2 fewer than max_position_embeddings)."""
    batch, length = shape
    positions = getattr(config, "max_position_embeddings", None)
    if isinstance(positions, int) and positions > 4:
        length = min(length, positions - 2)
    ids = torch.tensor(ordinary_token_ids(config, batch * length), dtype=torch.long).reshape(batch, length)
    mask = torch.ones(batch, length, dtype=torch.long)
    if batch > 1:
        mask[-1, length - max(1, length // 3):] = 0
        pad = getattr(config, "pad_token_id", None)
        if isinstance(pad, int):
            ids[-1][mask[-1] == 0] = pad
    values = {"input_ids": ids, "attention_mask": mask, "token_type_ids": torch.zeros(batch, length, dtype=torch.long)}
    return tuple(values[name] for name in names)


def shape_for(model, load, shape):
    """shape, or one row of its length for a classifier whose config names no pad_token_id: a
    decoder's sequence classifier reads each row's last token that is not the pad id, so
    transformers refuses it more than one row (and tach does too); its batch-1 points still run."""
    if load.task == "sequence-classification" and getattr(model.config, "pad_token_id", None) is None:
        return 1, shape[1]
    return shape


def family_and_head(model, load):
    """How a refusal names what it refuses: "roberta (RobertaForSequenceClassification, sequence-classification)"."""
    return f"{getattr(model.config, 'model_type', '?')} ({type(model).__name__}, {load.task})"


def _one_line(exc):
    first = (str(exc).strip().splitlines() or [""])[0]
    return f"{type(exc).__name__}: {first}"[:400]


def export(load, directory):
    """Exports the model for `load` to directory/model.onnx and checks it; returns (parameters,
    input names, output names). Raises unsupported, naming the family and head, where torch.onnx
    cannot export it or its export computes something else than transformers' model."""
    import torch

    from .torch_engine import build_model
    model = build_model(torch, load.__class__(**{**load.__dict__, "device": "cpu", "train": None}))
    _, outputs, _ = TASKS[load.task]
    names = input_names(model)
    causal = load.task == "causal-lm"

    class ByName(torch.nn.Module):
        # Inputs and outputs by name: the models' positional parameters differ between families.
        def __init__(self):
            super().__init__()
            self.model = model

        def forward(self, *args):
            kwargs = dict(zip(names, args))
            if causal:
                kwargs["use_cache"] = False
            out = self.model(**kwargs)
            return tuple(out[name] for name in outputs)

    axes = {name: {0: "batch", 1: "length"} for name in names}
    axes.update({name: {0: "batch"} if load.task == "sequence-classification" else {0: "batch", 1: "length"}
                 for name in outputs})
    path = os.path.join(directory, "model.onnx")
    example = batch_inputs(torch, model.config, names, shape_for(model, load, EXAMPLE_SHAPE))
    try:
        with torch.no_grad():
            torch.onnx.export(ByName().eval(), example, path, input_names=names, output_names=list(outputs),
                              dynamic_axes=axes, opset_version=OPSET, dynamo=False)
    except Exception as e:
        if is_out_of_memory(e):
            raise
        traceback.print_exc(file=sys.stderr)
        raise unsupported(f"onnxruntime cannot run {family_and_head(model, load)}: torch.onnx cannot export it "
                          f"({_one_line(e)})") from e
    check_export(torch, model, load, path, names, outputs, ByName().eval())
    return sum(p.numel() for p in model.parameters()), names, list(outputs)


def check_export(torch, model, load, path, names, outputs, by_name):
    """ONNX Runtime's outputs of the export against transformers' on a CHECK_SHAPE batch (another
    shape than the trace's, with a padded row; padded positions of per-token outputs skipped), on
    the CPU. f32 exports only: ONNX Runtime's CPU provider lacks f16 kernels that its CUDA one has,
    so an f16 export is left to the point's own comparison with tach on its device."""
    import numpy
    import onnxruntime
    if load.dtype != "f32":
        return
    inputs = batch_inputs(torch, model.config, names, shape_for(model, load, CHECK_SHAPE))
    shape = list(inputs[0].shape)
    with torch.no_grad():
        want = [t.float().numpy() for t in by_name(*inputs)]
    try:
        session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
        got = session.run(list(outputs), {n: t.numpy() for n, t in zip(names, inputs)})
    except Exception as e:
        if is_out_of_memory(e):
            raise
        traceback.print_exc(file=sys.stderr)
        raise unsupported(f"onnxruntime cannot run {family_and_head(model, load)}: ONNX Runtime cannot run its "
                          f"export ({_one_line(e)})") from e
    keep = inputs[names.index("attention_mask")].numpy().astype(bool)
    for name, g, w in zip(outputs, got, want):
        g = numpy.asarray(g, dtype=numpy.float32)
        if g.shape != w.shape:
            raise unsupported(f"onnxruntime cannot run {family_and_head(model, load)}: its export gives {name} "
                              f"of shape {list(g.shape)} on a {shape} batch, transformers "
                              f"{list(w.shape)} (torch.onnx's trace kept a dimension of its example)")
        if w.ndim >= 2 and w.shape[:2] == keep.shape:  # per token: padded positions are not compared
            g, w = g[keep], w[keep]
        diff = float(numpy.max(numpy.abs(g - w))) if w.size else 0.0
        limit = CHECK_TOLERANCE * max(1.0, float(numpy.max(numpy.abs(w))) if w.size else 1.0)
        if not diff <= limit:
            raise unsupported(f"onnxruntime cannot run {family_and_head(model, load)}: its export's {name} "
                              f"differs from transformers' by {diff:.3g} (tolerance {limit:.3g}) on a "
                              f"{shape} batch with padding")
