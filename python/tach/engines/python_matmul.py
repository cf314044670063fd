"""python-matmul: an engine in Python's standard library only (no torch, no numpy), so the
protocol, the timing path, failures and results can be tested anywhere.

Its model is built from the model directory's config.json (hidden_size H, vocab_size, num_labels)
and the seed: an embedding table (rows made on first use), an H x H weight W and an H x num_labels
classifier C. One call: X = the embedding rows of the B*L ids [B*L, H]; Y = X W [B*L, H] (a
pure-Python matrix product); logits = Y[first token of each row] C [B, num_labels]. Training: the
same forward with a softmax cross-entropy loss, a backward that computes C's gradient and pushes
the output gradient back through W (dX = dY W^T, the same amount of work as the forward), and an
SGD-with-weight-decay update of C (the loss goes down; W stays fixed)."""
import json
import math
import os
import platform
import random
import time

from ._engine import Engine
from ._errors import bad_request, unsupported


def matmul(rows, columns):
    """rows [n, k] x (columns [m, k], the right matrix transposed) -> [n, m], in pure Python."""
    return [[sum(a * b for a, b in zip(row, col)) for col in columns] for row in rows]


def _num_labels(config, train):
    if train is not None and train.num_labels:
        return train.num_labels
    if config.get("num_labels"):
        return int(config["num_labels"])
    return len(config.get("id2label") or {}) or 2


class PythonMatmulEngine(Engine):
    name = "python-matmul"

    def versions(self):
        return {"python": platform.python_version()}

    def load(self, load):
        if load.task != "sequence-classification":
            raise unsupported(f"python-matmul computes sequence-classification logits only, not {load.task}")
        if load.device != "cpu":
            raise unsupported(f"python-matmul runs on the CPU only, not {load.device}")
        if load.dtype != "f32":
            raise unsupported(f"python-matmul computes in f32 (Python floats) only, not {load.dtype}")
        if load.train is not None and load.train.method != "full":
            raise unsupported(f"python-matmul trains all its weights (full) only, not {load.train.method}")
        with open(os.path.join(load.model, "config.json")) as f:
            config = json.load(f)
        hidden = config.get("hidden_size") or config.get("dim") or config.get("d_model")
        if not isinstance(hidden, int) or hidden < 1:
            raise unsupported(f"{load.model}/config.json has no hidden_size")
        self.hidden = hidden
        self.vocab = int(config.get("vocab_size") or 0)
        self.labels = _num_labels(config, load.train)
        self.seed = load.train.seed if load.train is not None else 0
        rng = random.Random(self.seed)
        scale = 1.0 / math.sqrt(hidden)
        self.weight_t = [[rng.gauss(0.0, scale) for _ in range(hidden)] for _ in range(hidden)]  # W^T [H, H]
        self.classifier_t = [[rng.gauss(0.0, scale) for _ in range(hidden)] for _ in range(self.labels)]  # C^T
        self.embeddings = {}
        self.train = load.train
        params = hidden * hidden + hidden * self.labels + self.vocab * hidden
        return {"parameters": params, "trainable_parameters": params if load.train else 0,
                "setup": {"kind": "none", "seconds": 0.0, "cached": False, "cache_age_s": None}}

    def _embedding(self, token):
        row = self.embeddings.get(token)
        if row is None:
            rng = random.Random(self.seed * 1_000_003 + token)
            row = self.embeddings[token] = [rng.uniform(-1.0, 1.0) for _ in range(self.hidden)]
        return row

    def convert_inputs(self, inputs):
        if self.vocab:
            bad = [t for row in inputs.input_ids for t in row if not 0 <= t < self.vocab]
            if bad:
                raise bad_request(f"token id {bad[0]} is outside the vocabulary (0..{self.vocab - 1})")
        self.rows = [self._embedding(t) for row in inputs.input_ids for t in row]  # X [B*L, H]

    def _forward(self):
        """(Y [B*L, H], logits [B, num_labels])."""
        y = matmul(self.rows, self.weight_t)
        first = y[::self.inputs.length]
        return y, matmul(first, self.classifier_t)

    def infer(self):
        return self._forward()[1]

    def named_outputs(self, logits):
        return {"logits": ((len(logits), self.labels), [float(v) for row in logits for v in row])}

    def train_step(self):
        clock = time.perf_counter_ns
        t_data = clock()
        self.rows = [self._embedding(t) for row in self.inputs.input_ids for t in row]  # the step's batch
        t0 = clock()
        y, logits = self._forward()
        loss, dlogits = 0.0, []
        for row, label in zip(logits, self.inputs.labels):
            top = max(row)
            exps = [math.exp(v - top) for v in row]
            total = sum(exps)
            loss -= math.log(exps[label] / total)
            dlogits.append([e / total - (1.0 if j == label else 0.0) for j, e in enumerate(exps)])
        batch = len(logits)
        loss /= batch
        t1 = clock()
        first = y[::self.inputs.length]
        # dC^T [num_labels, H] = dlogits^T first / B; dY (first tokens only, zeros elsewhere) W^T.
        grad_t = [[sum(dlogits[b][j] * first[b][h] for b in range(batch)) / batch for h in range(self.hidden)]
                  for j in range(self.labels)]
        dy = [[0.0] * self.hidden for _ in range(len(y))]
        for b in range(batch):
            dy[b * self.inputs.length] = [sum(dlogits[b][j] * self.classifier_t[j][h] for j in range(self.labels))
                                          for h in range(self.hidden)]
        weight = list(zip(*self.weight_t))  # W's rows: dX = dY W^T
        matmul(dy, weight)
        t2 = clock()
        lr, decay = self.train.lr, self.train.weight_decay
        self.classifier_t = [[c - lr * (g + decay * c) for c, g in zip(crow, grow)]
                             for crow, grow in zip(self.classifier_t, grad_t)]
        t3 = clock()
        return t0 - t_data, t1 - t0, t2 - t1, t3 - t2, loss
