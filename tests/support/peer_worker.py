"""One process of a 2-process job that runs a collective in a loop (tests/test_peers.py):
`hang` leaves process 1 to be stopped by the test, `fail` makes process 1 raise its own error."""

import sys

from sebulba.experiment import distributed
from sebulba.experiment.peers import abandon


def main(address: str, process_id: int, mode: str) -> None:
    assert distributed.initialize(address, 2, process_id, peer_timeout_s=3.0)
    import numpy as np

    from sebulba.loop.processes import allgather

    step = 0
    try:
        while True:
            allgather(np.array([step]))
            step += 1
            if step == 20:
                print("running", flush=True)
            if mode == "fail" and process_id == 1 and step == 50:
                raise RuntimeError("boom in process 1")
    except Exception as e:  # what the entry points do (sebulba.experiment.cli.run_main)
        abandon(distributed.watch(), e, collective_failure="boom" not in str(e))


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), sys.argv[3])
