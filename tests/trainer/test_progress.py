from trainer.loop import StepResult
from trainer.progress import Progress


def _r(step):
    return StepResult(
        step=step,
        loss=0.0,
        reward=0.5,
        grad_norm=1.0,
        tokens=10,
        samples=256,
        generation_s=0.1,
        train_s=0.1,
        refit_s=0.0,
        checkpoint_block_s=0.0,
        step_s=0.25,
        optimizer_done_ns=0,
    )


def test_plain_lines_when_not_a_tty(capsys):
    with Progress(19, 18, tty=False) as p:
        p(_r(17), 0)
        p(_r(19), 2)
    out = capsys.readouterr().out.splitlines()
    assert out == [
        "step 17/19  reward 0.500  0.25 s/step  checkpoints 0  (saving from step 18)",
        "step 19/19  reward 0.500  0.25 s/step  checkpoints 2",
    ]


def test_rich_bar_on_a_tty(capsys):
    with Progress(19, 18, tty=True) as p:
        p(_r(1), 0)
    assert "step 1/19" not in capsys.readouterr().out  # the bar, not plain lines
