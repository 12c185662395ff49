"""`--backend vllm`: the engine, its outputs, the weights streamed into it."""
