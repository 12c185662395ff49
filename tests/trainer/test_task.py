from trainer.policy.task import Task, dev_tasks, holdout_texts, reward, training_pool, training_tasks, validation_tasks


def test_validation_is_251_fixed_and_disjoint():
    val = validation_tasks()
    assert len(val) == 251 and len(set(val)) == 251
    # Fixed forever: the first three by SHA-256 of the prompt.
    assert val[:3] == [Task("71+63=", "134"), Task("46+48=", "94"), Task("12+62=", "74")]
    dev, pool = set(dev_tasks()), set(training_pool())
    holdout = set(holdout_texts())
    assert not set(val) & dev and not set(val) & pool and not dev & pool
    assert not {t.prompt + t.answer for t in val} & holdout
    assert len(val) + len(dev) + len(holdout) + len(pool) == 10_000


def test_training_prompts_depend_only_on_seed_and_step():
    a = training_tasks(0, 5, 16)
    assert a == training_tasks(0, 5, 16)
    assert a != training_tasks(0, 6, 16) and a != training_tasks(1, 5, 16)
    assert set(a) <= set(training_pool())


def test_reward_is_exact_answer():
    t = Task("2+2=", "4")
    assert reward(t, "4") == 1.0 and reward(t, " 4 ") == 1.0
    assert reward(t, "44") == 0.0 and reward(t, "") == 0.0 and reward(t, "5") == 0.0


def test_spec_task_trains_on_the_unscored_items_and_rewards_with_its_verifier(tmp_path):
    import json

    import pytest

    from trainer.policy.taskspec import TaskSpecError, load_spec
    from trainer.policy.tokenizer import CharTokenizer
    from trainer.training_task import SpecTask, training_task

    items = [{"id": str(i), "prompt": f"{i}+1=", "answer": str(i + 1)} for i in range(10)]
    (tmp_path / "d.jsonl").write_text("".join(json.dumps(i) + "\n" for i in items))
    spec = tmp_path / "s.toml"
    sampling = "k = 1\ntemperature = 0.1\ntop_p = 0.95\nmax_new_tokens = 4\ntarget = 0.69\n"
    spec.write_text(
        f'name = "s"\ndata = "d.jsonl"\nsamples = 3\nprompt = "Q: {{prompt}}"\n{sampling}[verifier]\nkind = "numeric"\n'
    )
    task = training_task(str(spec), CharTokenizer())
    batch = task.problems(0, 1, 50)
    assert {p.prompt for p in batch} <= {f"Q: {i}+1=" for i in range(3, 10)}  # never the 3 scored items
    assert len({p.prompt for p in batch}) > 3 and task.problems(0, 1, 50) == batch != task.problems(0, 2, 50)
    problem = next(p for p in batch if p.prompt == "Q: 4+1=")
    assert task.reward(problem, " 5.0") == 1.0 and task.reward(problem, "6") == 0.0  # numeric: 5.0 == 5
    spec.write_text(f'name = "s"\ndata = "d.jsonl"\n{sampling}[verifier]\nkind = "exact"\n')  # every item scored
    with pytest.raises(TaskSpecError, match="no items to train on"):
        SpecTask(load_spec(spec), CharTokenizer())
