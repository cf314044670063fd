"""torch and torch-compile: transformers' AutoModelFor<task> in PyTorch, eager or wrapped in
torch.compile (compiled at the first call: the "prepare" request times it).

Training is one step as transformers' Trainer runs it: zero_grad, forward with the labels and the
loss, backward, clipping at max_grad_norm, torch.optim.AdamW. f32 trains f32 weights; bf16 and f16
keep f32 weights and run the forward and loss under autocast in that dtype (Trainer's --bf16/--fp16).
LoRA adds peft's adapters; QLoRA loads the base in bitsandbytes' NF4 under them. On the CPU,
QLoRA takes two workarounds of bitsandbytes 0.50 (cpu_qlora below): its portable dequantization
instead of the AVX-512 kernel that scales rows with the wrong block's absmax, and each 4-bit layer
kept off the AVX-512-BF16 path that computes in bf16 whatever the compute dtype says. With dropout
off (train.dropout false) every dropout rate of the model is 0, so that its losses can be compared
with another engine's step by step.

The model-building and step code here is also what scripts/peers/ time (they import it)."""
import platform
import time

from ._engine import Engine
from ._errors import bad_request, unsupported

# task -> (transformers class name, its outputs in the protocol's order, peft's task type)
TASKS = {
    "sequence-classification": ("AutoModelForSequenceClassification", ("logits",), "SEQ_CLS"),
    "token-classification": ("AutoModelForTokenClassification", ("logits",), "TOKEN_CLS"),
    "question-answering": ("AutoModelForQuestionAnswering", ("start_logits", "end_logits"), "QUESTION_ANS"),
    "masked-lm": ("AutoModelForMaskedLM", ("logits",), None),
    "feature-extraction": ("AutoModel", ("last_hidden_state",), "FEATURE_EXTRACTION"),
    "causal-lm": ("AutoModelForCausalLM", ("logits",), "CAUSAL_LM"),
}
LABELLED_TASKS = ("sequence-classification", "token-classification")  # num_labels applies to these heads


def torch_dtype(torch, name):
    return {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16}[name]


def dtype_keyword():
    """from_pretrained's dtype argument: `dtype` from transformers 4.56, `torch_dtype` before."""
    import transformers
    major, minor = (int(x) for x in transformers.__version__.split(".")[:2])
    return "dtype" if (major, minor) >= (4, 56) else "torch_dtype"


def build_model(torch, load):
    """transformers' model for a _requests.Load, on its device, in eval() or train() mode, with
    peft's adapters for LoRA and QLoRA. The seed is set first, so a new head and the adapters start
    from the same weights in every run."""
    import transformers
    class_name, _, peft_task = TASKS[load.task]
    train = load.train
    if train is not None:
        torch.manual_seed(train.seed)
    kwargs = {}
    if train is not None and train.method == "qlora":
        _require("bitsandbytes", "QLoRA")
        _require("peft", "QLoRA")
        compute = torch_dtype(torch, load.dtype)
        kwargs.update(quantization_config=transformers.BitsAndBytesConfig(
            load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_compute_dtype=compute,
            llm_int8_skip_modules=["score", "classifier", "pre_classifier", "qa_outputs", "lm_head"]),
            device_map={"": torch.device(load.device).index or 0} if load.on_gpu else "cpu")
        kwargs[dtype_keyword()] = torch.float32
    else:
        # Training keeps f32 weights (autocast runs the lower precision); inference loads the dtype.
        kwargs[dtype_keyword()] = torch.float32 if train is not None else torch_dtype(torch, load.dtype)
    if train is not None and train.method in ("lora", "qlora"):
        _require("peft", "LoRA")
    if train is not None:
        config = transformers.AutoConfig.from_pretrained(load.model)
        if train.num_labels and load.task in LABELLED_TASKS and config.num_labels != train.num_labels:
            config.num_labels = train.num_labels
            kwargs.update(ignore_mismatched_sizes=True)
        if not train.dropout:
            for key, value in list(vars(config).items()):
                if "dropout" in key and isinstance(value, float):
                    setattr(config, key, 0.0)
        kwargs["config"] = config
    model = getattr(transformers, class_name).from_pretrained(load.model, **kwargs)
    if train is not None and not train.dropout:
        for module in model.modules():  # a family that fixes a rate in code rather than its config
            if isinstance(module, torch.nn.Dropout):
                module.p = 0.0
    if train is not None and train.method == "qlora" and not load.on_gpu:
        cpu_qlora(torch, model)
    if train is not None and train.method in ("lora", "qlora"):
        from peft import LoraConfig, get_peft_model
        model = get_peft_model(model, LoraConfig(r=train.lora_r, lora_alpha=train.lora_alpha,
                                                 lora_dropout=train.lora_dropout, target_modules=train.lora_targets,
                                                 modules_to_save=train.lora_modules_to_save, task_type=peft_task))
    if train is not None and train.gradient_checkpointing:
        if not getattr(model, "supports_gradient_checkpointing", True):
            raise unsupported(f"{type(model).__name__} does not support gradient checkpointing in transformers")
        # Non-reentrant: recomputes with the same autograd rules (and works with frozen inputs under LoRA).
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    if not (train is not None and train.method == "qlora"):
        model.to(torch.device(load.device))
    return model.train() if train is not None else model.eval()


_PORTABLE_DEQUANTIZE = []


def cpu_qlora(torch, model):
    """bitsandbytes 0.50.2 on the CPU, made right for QLoRA: NF4 dequantization through its portable
    PyTorch code (the native AVX-512 kernel, taken for rows of a multiple of 16 elements, scales
    element (row, col) by absmax[row * (cols / 64) + col / 64], as if each row were whole 64-blocks,
    so at widths 16, 32, 48, 80, ... the rows past the first take another block's scale), and each
    Linear4bit off the AVX-512-BF16 path (gemv_4bit, which casts to bf16 whatever the compute dtype)."""
    import bitsandbytes
    if not _PORTABLE_DEQUANTIZE:
        from bitsandbytes.backends.default.ops import _dequantize_4bit_compute
        from bitsandbytes.backends.utils import _get_4bit_code

        def portable_dequantize_4bit(A, absmax, blocksize, quant_type, shape, dtype):
            if A.dtype != torch.uint8:
                A = A.view(torch.uint8)
            return _dequantize_4bit_compute(A.reshape(-1), absmax, _get_4bit_code(quant_type, A.device), blocksize,
                                            shape, dtype)
        torch.library.register_kernel("bitsandbytes::dequantize_4bit", "cpu", portable_dequantize_4bit)
        _PORTABLE_DEQUANTIZE.append(portable_dequantize_4bit)
    for m in model.modules():
        if isinstance(m, bitsandbytes.nn.Linear4bit):
            m.support_avx512bf16_for_cpu = False


def _require(module, what):
    import importlib.util
    if importlib.util.find_spec(module) is None:
        raise unsupported(f"{what} needs {module}, which this Python lacks: python3 -m pip install {module}")


def model_inputs(torch, inputs, device, task, with_labels):
    """The keyword arguments of the model's forward, as int64 tensors on the device."""
    def tensor(rows):
        return torch.tensor(rows, dtype=torch.long, device=device)
    args = {"input_ids": tensor(inputs.input_ids), "attention_mask": tensor(inputs.attention_mask)}
    if inputs.token_type_ids is not None:
        args["token_type_ids"] = tensor(inputs.token_type_ids)
    if task == "causal-lm":
        args["use_cache"] = False
    if with_labels:
        if task == "question-answering":
            args["start_positions"] = tensor(inputs.start_positions)
            args["end_positions"] = tensor(inputs.end_positions)
        else:
            args["labels"] = tensor(inputs.labels)
    return args


class TrainStep:
    """One training step on a built model: zero_grad, forward with the loss, backward, clipping,
    AdamW; each phase timed and, on a GPU, synchronised at its end."""

    def __init__(self, torch, model, train, device, dtype):
        self.torch, self.model, self.device = torch, model, torch.device(device)
        self.params = [p for p in model.parameters() if p.requires_grad]
        self.max_grad_norm = train.max_grad_norm
        self.autocast = None if dtype == "f32" else torch_dtype(torch, dtype)
        # The fused AdamW (one kernel per step on CUDA, one loop on the CPU): transformers' Trainer's default.
        self.optimizer = torch.optim.AdamW(self.params, lr=train.lr, weight_decay=train.weight_decay, fused=True,
                                           betas=(train.adam_beta1, train.adam_beta2), eps=train.adam_eps)
        self.forward = model
        self.cuda_graphs = False  # a torch.compile mode that records CUDA graphs: each step is marked as new

    def sync(self):
        if self.device.type == "cuda":
            self.torch.cuda.synchronize(self.device)

    def __call__(self, batch):
        """(forward_ns, backward_ns, optimizer_ns, loss) of one step on `batch` (forward's kwargs)."""
        torch, clock = self.torch, time.perf_counter_ns
        t0 = clock()
        if self.cuda_graphs:
            torch.compiler.cudagraph_mark_step_begin()
        self.optimizer.zero_grad(set_to_none=True)
        if self.autocast is not None:
            with torch.autocast(self.device.type, dtype=self.autocast):
                loss = self.forward(**batch).loss
        else:
            loss = self.forward(**batch).loss
        self.sync()
        t1 = clock()
        loss.backward()
        self.sync()
        t2 = clock()
        if self.max_grad_norm:
            torch.nn.utils.clip_grad_norm_(self.params, self.max_grad_norm)
        self.optimizer.step()
        self.sync()
        t3 = clock()
        return t1 - t0, t2 - t1, t3 - t2, loss.detach()


class TorchEngine(Engine):
    name = "torch"
    packages = (("torch", "torch"), ("transformers", "transformers"))
    compiled = False

    def __init__(self):
        super().__init__()
        import torch
        self.torch = torch

    def versions(self):
        import importlib.metadata as md
        out = {"python": platform.python_version(), "torch": self.torch.__version__}
        for package in ("transformers", "peft", "bitsandbytes"):
            try:
                out[package] = md.version(package)
            except md.PackageNotFoundError:
                pass
        if self.torch.cuda.is_available():
            out["cuda"] = self.torch.version.cuda
        return out

    def devices(self):
        n = self.torch.cuda.device_count() if self.torch.cuda.is_available() else 0
        return ["cpu"] + [f"cuda:{i}" for i in range(n)]

    def load(self, load):
        torch = self.torch
        if load.on_gpu and load.device not in self.devices():
            raise unsupported(f"{load.device} is not a device this PyTorch sees ({', '.join(self.devices())})")
        if load.threads:
            torch.set_num_threads(load.threads)
        self.device = torch.device(load.device)
        model = build_model(torch, load)
        self.model = model
        t0 = time.perf_counter()
        self.forward = torch.compile(model) if self.compiled else model
        setup = {"kind": "torch.compile" if self.compiled else "none", "seconds": time.perf_counter() - t0
                 if self.compiled else 0.0, "cached": False, "cache_age_s": None}
        self.step = None
        if load.train is not None:
            self.step = TrainStep(torch, model, load.train, load.device, load.dtype)
            self.step.forward = self.forward
        self.outputs_names = TASKS[load.task][1]
        self.task = load.task
        return {"parameters": sum(p.numel() for p in model.parameters()),
                "trainable_parameters": sum(p.numel() for p in model.parameters() if p.requires_grad)
                if load.train is not None else 0, "setup": setup}

    def convert_inputs(self, inputs):
        train = self.load_request is not None and self.load_request.train is not None
        vocab = getattr(self.model.config, "vocab_size", None)
        if vocab:
            top = max(max(row) for row in inputs.input_ids)
            low = min(min(row) for row in inputs.input_ids)
            if low < 0 or top >= vocab:
                raise bad_request(f"token id {top if top >= vocab else low} is outside the model's vocabulary "
                                  f"(0..{vocab - 1})")
        self.batch = model_inputs(self.torch, inputs, self.device, self.task, train)
        # A training step's batch starts on the host, in pinned memory where there is a GPU to copy to.
        pin = self.device.type == "cuda"
        self.host_batch = {k: (v.cpu().pin_memory() if pin else v.cpu()) if hasattr(v, "cpu") else v
                           for k, v in self.batch.items()}

    def sync(self):
        if self.device.type == "cuda":
            self.torch.cuda.synchronize(self.device)

    def infer(self):
        with self.torch.no_grad():
            return self.forward(**self.batch)

    def train_step(self):
        """The data phase puts the step's batch on the device, as a training loop's copy from its
        loader does (on the CPU the tensors are there already); then the step's own phases."""
        clock = time.perf_counter_ns
        t0 = clock()
        batch = {k: v.to(self.device, non_blocking=True) if hasattr(v, "to") else v for k, v in self.host_batch.items()}
        self.sync()
        data = clock() - t0
        forward, backward, optimizer, loss = self.step(batch)
        return data, forward, backward, optimizer, loss

    def named_outputs(self, raw):
        out = {}
        for name in self.outputs_names:
            t = raw[name].detach().float().cpu().contiguous()
            out[name] = (tuple(t.shape), t.reshape(-1).tolist())
        return out

    def device_peaks(self, reset):
        if self.load_request is None or not self.load_request.on_gpu:
            return None, None
        torch = self.torch
        dev = torch.device(self.load_request.device)
        allocated, reserved = torch.cuda.max_memory_allocated(dev), torch.cuda.max_memory_reserved(dev)
        if reset:
            torch.cuda.reset_peak_memory_stats(dev)
        return allocated, reserved


class TorchCompileEngine(TorchEngine):
    name = "torch-compile"
    compiled = True
