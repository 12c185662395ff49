"""CPU seconds of the tiny model's work under one CPU kernel set: 20 warm-up batches of 128 (forward,
backward, AdamW) and pass@4 sampling of 128 dev tasks, one thread. Run it once per kernel set, each in a
fresh process (the variables are read when torch loads), e.g.

    RECORDER_CPU_KERNELS=native ATEN_CPU_CAPABILITY=avx2 MKL_CBWR=AVX2 python bench/kernel_cost.py
    RECORDER_CPU_KERNELS=pinned python bench/kernel_cost.py

CPU time (`time.process_time`), not wall time: on a shared machine it is the part that load does not stretch.
"""

import json
import time

from trainer.policy.kernels import is_pinned, pin_cpu_kernels, wants_pinned

pin_cpu_kernels(wants_pinned("tiny", "torch"))  # the tiny model, as the trainer pins it

import torch  # noqa: E402  (after the pin: the kernels are chosen when torch loads)

from trainer.learning.grpo import build_batch, token_logprobs  # noqa: E402
from trainer.policy.model import ModelConfig, build_model, build_tokenizer  # noqa: E402
from trainer.policy.task import dev_tasks, warmup_tasks  # noqa: E402
from trainer.warmup import pass_at_k  # noqa: E402

torch.set_num_threads(1)
torch.manual_seed(0)
model, tok = build_model(ModelConfig()), build_tokenizer(ModelConfig())
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
c0 = time.process_time()
for b in range(1, 21):
    tasks = warmup_tasks(0, b, 128)
    prompts = [[tok.bos_id, *tok.encode(t.prompt)] for t in tasks]
    batch = build_batch(prompts, [[*tok.encode(t.answer), tok.eos_id] for t in tasks], tok.pad_id)
    nll = -(token_logprobs(model(input_ids=batch.inputs).logits, batch.targets) * batch.mask).sum() / batch.mask.sum()
    opt.zero_grad(set_to_none=True)
    nll.backward()
    opt.step()
c1 = time.process_time()
pass_at_k(model, tok, dev_tasks()[:128], k=4, temperature=0.1, top_p=0.95, max_new_tokens=5, salt="dev")
c2 = time.process_time()
row = {
    "pinned": is_pinned(),
    "aten": str(torch.backends.cpu.get_cpu_capability()),
    "train_20_batches_cpu_s": round(c1 - c0, 2),
    "sample_512_cpu_s": round(c2 - c1, 2),
}
print(json.dumps(row))
