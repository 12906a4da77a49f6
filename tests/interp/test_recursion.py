"""The VM run from several threads at once: the process-wide recursion limit stays right for each."""
import sys
import threading

from magpy import interp


def depth(n):
    return 0 if n == 0 else 1 + depth(n - 1)


def test_vms_in_threads_keep_room_for_each_other_and_restore_the_limit():
    before = sys.getrecursionlimit()
    barrier = threading.Barrier(4)
    results, errors = [], []

    def work(k):
        barrier.wait()
        try:
            # the VMs start and finish at different times; a VM putting back the limit it found
            # while another runs deep would make that one fail
            for _ in range(k + 1):
                results.append(interp.run(depth, 300 + 100 * k))
        except BaseException as e:  # noqa: BLE001 - handed to the test
            errors.append(e)

    workers = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert not errors
    assert sorted(results) == sorted(300 + 100 * k for k in range(4) for _ in range(k + 1))
    assert sys.getrecursionlimit() == before


def test_program_recursion_limit_is_enforced_and_kept_after_the_vm():
    before = sys.getrecursionlimit()

    def lower_then_recurse():
        sys.setrecursionlimit(before - 5)
        try:
            return depth(before + 50)
        except RecursionError as e:
            return sys.getrecursionlimit(), type(e).__name__
    try:
        assert interp.run(lower_then_recurse) == (before - 5, "RecursionError")
        assert sys.getrecursionlimit() == before - 5  # as after the same call run natively
    finally:
        sys.setrecursionlimit(before)
