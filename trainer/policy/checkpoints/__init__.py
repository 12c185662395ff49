"""Checkpoint formats: which one a directory holds (`detect`), its shards' digests (`manifest`), its state
dict streamed with every shard hashed on the way (`load`), and the model it goes into (`model_code`).

Formats: Hugging Face safetensors, the recorder's own checkpoint, torch DCP (incl. FSDP2 archives and
snapshots) and Megatron-Core `torch_dist` as NeMo-RL writes it.
"""

from trainer.policy.checkpoints.detect import CheckpointInfo as CheckpointInfo
from trainer.policy.checkpoints.manifest import Manifest as Manifest
from trainer.policy.checkpoints.manifest import ShardDigest as ShardDigest
from trainer.policy.checkpoints.readers import detect as detect
from trainer.policy.checkpoints.readers import load_state_dict as load_state_dict
