"""The GRPO maths and the policy update in mini-batches."""
