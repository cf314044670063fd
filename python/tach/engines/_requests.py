"""The requests' fields, checked once for every engine: a wrong field is a "bad_request" naming it."""
import os
from dataclasses import dataclass, field

from ._errors import bad_request

TASKS = ("sequence-classification", "token-classification", "question-answering", "masked-lm",
         "feature-extraction", "causal-lm")
DTYPES = ("f32", "bf16", "f16")
METHODS = ("full", "lora", "qlora")
# The tasks whose labels are one per token ([batch][length]); the others take one per row ([batch]).
PER_TOKEN_LABELS = ("token-classification", "masked-lm", "causal-lm")


@dataclass
class Train:
    method: str = "full"
    lr: float = 5e-5
    weight_decay: float = 0.0
    seed: int = 42
    num_labels: int = None
    lora_r: int = 8
    lora_alpha: float = 16
    lora_dropout: float = 0.0
    lora_targets: list = None  # None: the engine's default for the model family
    lora_modules_to_save: list = None  # None: peft's for the task (the head)
    gradient_checkpointing: bool = False  # recompute each layer's activations in the backward
    max_grad_norm: float = 1.0  # tach's default clipping (0 or null: none)
    adam_beta1: float = 0.9
    adam_beta2: float = 0.999
    adam_eps: float = 1e-8
    dropout: bool = True  # false: every dropout rate of the model 0 (a loss comparable step by step)


@dataclass
class Load:
    model: str
    task: str
    dtype: str = "f32"
    device: str = "cpu"
    threads: int = 0  # 0: the library's default
    cache_dir: str = None
    train: Train = None

    @property
    def on_gpu(self):
        return self.device != "cpu"


@dataclass
class Inputs:
    """Token ids [batch][length] and what goes with them, as plain lists (each engine converts)."""
    input_ids: list
    attention_mask: list
    token_type_ids: list = None
    labels: list = None
    start_positions: list = None
    end_positions: list = None
    extra: dict = field(default_factory=dict)

    @property
    def batch(self):
        return len(self.input_ids)

    @property
    def length(self):
        return len(self.input_ids[0])


def _number(req, key, default, kind=float, minimum=None):
    value = req.get(key, default)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (kind is int and value != int(value)):
        raise bad_request(f"{key} must be a number, not {value!r}")
    value = kind(value)
    if minimum is not None and value < minimum:
        raise bad_request(f"{key} must be at least {minimum}, not {value}")
    return value


def parse_train(spec):
    if spec is None:
        return None
    if not isinstance(spec, dict):
        raise bad_request(f"train must be an object or null, not {spec!r}")
    method = spec.get("method", "full")
    if method not in METHODS:
        raise bad_request(f"train.method must be one of {', '.join(METHODS)}, not {method!r}")
    targets = spec.get("lora_targets")
    if targets is not None and (not isinstance(targets, list) or not all(isinstance(t, str) for t in targets)):
        raise bad_request(f"train.lora_targets must be a list of module names, not {targets!r}")
    save = spec.get("lora_modules_to_save")
    if save is not None and (not isinstance(save, list) or not all(isinstance(t, str) for t in save)):
        raise bad_request(f"train.lora_modules_to_save must be a list of module names, not {save!r}")
    flags = {}
    for key, default in (("dropout", True), ("gradient_checkpointing", False)):
        flags[key] = spec.get(key, default)
        if not isinstance(flags[key], bool):
            raise bad_request(f"train.{key} must be true or false, not {flags[key]!r}")
    return Train(method=method, lora_modules_to_save=save or None, **flags, lr=_number(spec, "lr", 5e-5),
                 weight_decay=_number(spec, "weight_decay", 0.0, minimum=0),
                 adam_beta1=_number(spec, "adam_beta1", 0.9, minimum=0),
                 adam_beta2=_number(spec, "adam_beta2", 0.999, minimum=0),
                 adam_eps=_number(spec, "adam_eps", 1e-8, minimum=0),
                 seed=_number(spec, "seed", 42, int), num_labels=_number(spec, "num_labels", None, int, 1),
                 lora_r=_number(spec, "lora_r", 8, int, 1), lora_alpha=_number(spec, "lora_alpha", 16),
                 lora_dropout=_number(spec, "lora_dropout", 0.0, minimum=0), lora_targets=targets or None,
                 max_grad_norm=_number(spec, "max_grad_norm", 1.0, minimum=0))


def parse_load(req):
    model = req.get("model")
    if not isinstance(model, str) or not model:
        raise bad_request("load needs \"model\": a model directory")
    if not os.path.isfile(os.path.join(model, "config.json")):
        raise bad_request(f"{model} is not a model directory (no config.json)")
    task = req.get("task")
    if task not in TASKS:
        raise bad_request(f"task must be one of {', '.join(TASKS)}, not {task!r}")
    dtype = req.get("dtype", "f32")
    if dtype not in DTYPES:
        raise bad_request(f"dtype must be one of {', '.join(DTYPES)}, not {dtype!r}")
    device = req.get("device", "cpu")
    if not isinstance(device, str) or not (device == "cpu" or (device.startswith("cuda:") and device[5:].isdigit())):
        raise bad_request(f"device must be cpu or cuda:N, not {device!r}")
    cache_dir = req.get("cache_dir")
    if cache_dir is not None and not isinstance(cache_dir, str):
        raise bad_request(f"cache_dir must be a directory path, not {cache_dir!r}")
    return Load(model=os.path.abspath(model), task=task, dtype=dtype, device=device,
                threads=_number(req, "threads", 0, int, 0), cache_dir=cache_dir, train=parse_train(req.get("train")))


def _matrix(req, key, batch=None, length=None, required=False):
    """[batch][length] ints, or None when absent and not required."""
    rows = req.get(key)
    if rows is None:
        if required:
            raise bad_request(f"inputs needs \"{key}\": [batch][length] token ids")
        return None
    if not isinstance(rows, list) or not rows or not all(isinstance(r, list) and r for r in rows):
        raise bad_request(f"{key} must be a non-empty list of non-empty rows of integers")
    width = len(rows[0])
    for i, row in enumerate(rows):
        if len(row) != width:
            raise bad_request(f"{key} rows differ in length: row 0 has {width}, row {i} has {len(row)}")
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in row):
            raise bad_request(f"{key} row {i} holds something that is not an integer")
    if batch is not None and (len(rows), width) != (batch, length):
        raise bad_request(f"{key} is [{len(rows)}][{width}], input_ids [{batch}][{length}]")
    return rows


def _vector(req, key, batch):
    values = req.get(key)
    if values is None:
        return None
    if (not isinstance(values, list) or len(values) != batch
            or not all(isinstance(v, int) and not isinstance(v, bool) for v in values)):
        raise bad_request(f"{key} must be {batch} integers, one per row")
    return values


def parse_inputs(req, load):
    """The token ids and, when training, the labels the task needs (missing ones are a bad_request;
    a language model's default labels are its input ids: transformers shifts them for causal-lm)."""
    ids = _matrix(req, "input_ids", required=True)
    batch, length = len(ids), len(ids[0])
    mask = _matrix(req, "attention_mask", batch, length) or [[1] * length for _ in range(batch)]
    inputs = Inputs(ids, mask, _matrix(req, "token_type_ids", batch, length))
    task = load.task if load else None
    if task in PER_TOKEN_LABELS:
        inputs.labels = _matrix(req, "labels", batch, length)
    elif task == "question-answering":
        inputs.start_positions = _vector(req, "start_positions", batch)
        inputs.end_positions = _vector(req, "end_positions", batch)
    else:
        inputs.labels = _vector(req, "labels", batch)
    if load is not None and load.train is not None:
        if task in ("masked-lm", "causal-lm") and inputs.labels is None:
            inputs.labels = [list(r) for r in ids]
        elif task == "question-answering" and (inputs.start_positions is None or inputs.end_positions is None):
            raise bad_request("training question answering needs \"start_positions\" and \"end_positions\"")
        elif task == "feature-extraction":
            raise bad_request("feature-extraction has no loss to train")
        elif task != "question-answering" and inputs.labels is None:
            shape = "[batch][length]" if task in PER_TOKEN_LABELS else "[batch]"
            raise bad_request(f"training needs \"labels\": {shape} integers")
    return inputs
