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
