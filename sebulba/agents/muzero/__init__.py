"""MuZero (issue 57, in progress): so far its networks (`networks.py`: representation, dynamics
and prediction, the learner's unroll, the search's root and model step) and its training targets
(`targets.py`); the agent (the search in the actors' step, the replay of sequences with their
search policies, the losses) comes next."""
