"""Replays on the learner devices, as pure functions over fixed-shape pytrees: `transitions`
(DQN, SAC, TD3 and users' off-policy agents), `sequences` (R2D2) and the prioritized sampling
both use (`priorities`)."""
