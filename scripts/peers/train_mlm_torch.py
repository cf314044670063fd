"""transformers' masked-LM training step on the model and data `tach train --task mlm` reads.

Usage: train_mlm_torch.py MODEL_DIR DATA.csv [STEPS]  (one thread, batch 8, the text column)
Prints the median forward, backward and optimizer times (ms) over the steps after the first, the
phases tach's summary.json reports as phase_ms_median. Run it alternately with
`tach train -m MODEL_DIR --task mlm -d DATA.csv -b 8 -t 1 --max-steps 8` on a shared machine.
"""
import csv
import statistics
import sys
import time

import torch
import transformers as T

torch.set_num_threads(1)
torch.manual_seed(0)
model_dir, data = sys.argv[1], sys.argv[2]
steps = int(sys.argv[3]) if len(sys.argv) > 3 else 8
tok = T.AutoTokenizer.from_pretrained(model_dir)
model = T.AutoModelForMaskedLM.from_pretrained(model_dir)
model.train()
opt = torch.optim.AdamW(model.parameters(), lr=5e-5)
collate = T.DataCollatorForLanguageModeling(tok, mlm_probability=0.15)
encoded = [tok(r["text"], truncation=True, max_length=128) for r in csv.DictReader(open(data))]
forward, backward, optimizer = [], [], []
for s in range(steps):
    batch = collate([encoded[(s * 8 + i) % len(encoded)] for i in range(8)])
    t0 = time.perf_counter()
    out = model(**batch)
    t1 = time.perf_counter()
    out.loss.backward()
    t2 = time.perf_counter()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    opt.zero_grad()
    t3 = time.perf_counter()
    forward.append((t1 - t0) * 1e3)
    backward.append((t2 - t1) * 1e3)
    optimizer.append((t3 - t2) * 1e3)
print("torch forward %.1f backward %.1f optimizer %.1f ms (medians of %d steps)" %
      (statistics.median(forward[1:]), statistics.median(backward[1:]), statistics.median(optimizer[1:]), steps - 1))
