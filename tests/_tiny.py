"""The tiny setting of each method (``--set`` overrides) that the toy runs of several test
modules train with: a few problems, steps and tokens, so a run on the shipped arith reference
takes seconds (training/test_budget.py, methods/test_canaries.py, methods/test_infra_errors.py,
run/test_run_hooks.py)."""

TINY = {
    "sft": ["batch_size=2", "epochs=0.0001"],
    "rft": ["n_problems=2", "chunk=4", "samples_per_prompt=2", "max_new_tokens=48", "sft.batch_size=2",
            "sft.epochs=1"],
    "dpo": ["n_problems=2", "chunk=4", "samples_per_prompt=4", "max_new_tokens=48", "batch_size=1",
            "epochs=1"],
    "grpo": ["prompts_per_step=2", "samples_per_prompt=2", "max_new_tokens=48",
             "minibatch_size=4", "max_steps=2"],
    "ppo": ["rollout_batch=4", "max_new_tokens=48", "minibatch_size=4", "max_steps=2"],
    "dapo": ["n_problems=4", "n_samples=4", "n_rollouts=2", "mc_samples=2", "max_new_tokens=48",
             "gen_chunk=8", "actor.batch_actions=2", "actor.epochs=1", "critic.batch_size=8",
             # the plateaued reference is confident and mostly right: sample hot and keep every
             # state with two distinct actions, so the actor has data to spend the target on
             "min_spread=0.0", "temperature=2.0"],
}
