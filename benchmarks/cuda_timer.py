"""The clock pytest-benchmark reads (``--benchmark-timer=cuda_timer.synchronized_clock``).

GPU work is asynchronous: the clock first waits for the device, so a timed
region covers exactly the kernels launched inside it. Each benchmark times
several back-to-back calls per round, which spreads the one synchronization
over them. On a machine without CUDA it is a plain perf_counter.
"""

import time

import torch

if torch.cuda.is_available():

    def synchronized_clock() -> float:
        torch.cuda.synchronize()
        return time.perf_counter()

else:
    synchronized_clock = time.perf_counter
