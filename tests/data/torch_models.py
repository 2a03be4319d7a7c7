"""Small models for tests/cli/t0800-torch.sh (memplan_torch.py MODULE:CALLABLE)."""
import torch


def tiny():
    """Two linear layers with a ReLU between: 16 -> 8 -> 4."""
    return torch.nn.Sequential(torch.nn.Linear(16, 8), torch.nn.ReLU(), torch.nn.Linear(8, 4))


def raises():
    """A callable that fails while building its module."""
    raise RuntimeError("broken on purpose")


def not_a_module():
    return 42


class Fails(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 4)

    def forward(self, x):
        raise ValueError("forward fails on purpose")


def fails_in_forward():
    return Fails()
