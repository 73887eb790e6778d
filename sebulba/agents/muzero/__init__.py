"""MuZero (issue 57, in progress): so far its training targets (`targets.py`); the networks, the
search in the actors' step and the agent come next."""
