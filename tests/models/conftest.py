import pytest
import torch


@pytest.fixture(autouse=True)
def one_thread():
    """One intra-op thread: these tests check results, not speed, and OpenMP's spinning threads slow down
    badly when the 2-core machine is shared with other work."""
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)
