"""A stand-in for a model definition, in a directory named model_desc (the
layout RTP-LLM's stack rule keys on), for tests/python/torch_alloc_check.py.

Each function is one frame of a known chain that ends in an allocation:
`empty(nbytes, device, stream)` is memobs_torch_malloc itself (a ctypes
function: no Python frame of its own) or a Python helper outside
model_desc (standing in for torch/nn/functional.py). The check finds the
lines by their "# site:" markers and expects exactly these frames in the
Python stack tag. Nothing here imports torch.
"""
import threading


class FakeModel:
    def __init__(self, empty, device=0, stream=None):
        self.empty, self.device, self.stream = empty, device, stream

    def serve(self, nbytes):
        return self.forward(nbytes)  # site:serve

    def forward(self, nbytes):
        return self.attention(nbytes)  # site:forward

    def attention(self, nbytes):
        return self.empty(nbytes, self.device, self.stream)  # site:attention


# Seven levels: the stack keeps the first two and the last two frames.
def level1(empty, nbytes):
    return level2(empty, nbytes)  # site:level1


def level2(empty, nbytes):
    return level3(empty, nbytes)  # site:level2


def level3(empty, nbytes):
    return level4(empty, nbytes)  # site:level3


def level4(empty, nbytes):
    return level5(empty, nbytes)  # site:level4


def level5(empty, nbytes):
    return level6(empty, nbytes)  # site:level5


def level6(empty, nbytes):
    return level7(empty, nbytes)  # site:level6


def level7(empty, nbytes):
    return empty(nbytes, 0, None)  # site:level7


def worker(empty, nbytes, out):
    out.append(empty(nbytes, 0, None))  # site:worker


def in_thread(empty, nbytes):
    """Allocates from a new Python thread; returns the pointer."""
    out = []
    t = threading.Thread(target=worker, args=(empty, nbytes, out))
    t.start()
    t.join()
    return out[0] if out else None
