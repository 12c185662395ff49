"""`python -m recorder.cli`: the `recorder` command, so that `torchrun ... -m recorder.cli train` can launch it."""

from recorder.cli import main

main()
