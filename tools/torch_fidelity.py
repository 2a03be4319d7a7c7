#!/usr/bin/python3
"""Compare memplan's liveness peak of an exported net with PyTorch's measured peak.

    python3 tools/torch_fidelity.py [--memplan ./memplan] [--tolerance 2] [--grads keep,set_to_none]
                                    [--optimizer momentum] [--keep DIR] MODEL:SHAPE[=GEN]...

MODEL is MODULE:CALLABLE (as for memplan_torch.py), SHAPE the input's, e.g.
torchvision.models:resnet18:8,3,224,224.  Per model and gradient mode, on
the CPU: a fresh model (seed 0) exported by memplan_torch (warm-up step, then
the recorded step), `memplan check` of the net, `memplan analyze --strategy
liveness --format json` for peak_bytes; another fresh model (seed 0) for
PyTorch's peak of one step after a warm-up step, from the profiler's memory
events (memplan_torch.measure_peak).  With =GEN, the liveness peak of
`memplan gen GEN --framework pytorch` at the same batch, image (a 4-D SHAPE's
last two dimensions), optimizer and gradient mode is a third peak, its
twin's.  Prints one line per run:

    model batch grads torch_peak memplan_peak ratio gen_peak gen_ratio seconds ok|FAIL

and exits 1 when a ratio is off by more than the tolerance (percent) or a
net is refused, 2 on bad use.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import memplan_torch as mt  # noqa: E402

import torch  # noqa: E402


def small_transformer():
    """A small transformer classifier: 2 encoder layers, d_model 128, 4 heads,
    over [N, S, 128] inputs, mean-pooled into 10 classes."""
    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            layer = torch.nn.TransformerEncoderLayer(128, 4, 256, dropout=0.1, batch_first=True)
            self.encoder = torch.nn.TransformerEncoder(layer, 2)
            self.head = torch.nn.Linear(128, 10)

        def forward(self, x):
            return self.head(self.encoder(x).mean(1))
    return Net()


def one_linear():
    """One nn.Linear, 1024 to 1000: the byte-for-byte check."""
    return torch.nn.Linear(1024, 1000)


def liveness_peak(memplan, path):
    """memplan check, then analyze's liveness peak_bytes; (peak, None) or (None, why)."""
    chk = subprocess.run([memplan, "check", path], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                         universal_newlines=True)
    if chk.returncode != 0:
        return None, "memplan check: " + chk.stderr.strip()
    ana = subprocess.run([memplan, "analyze", path, "--strategy", "liveness", "--format", "json"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
    if ana.returncode != 0:
        return None, "memplan analyze: " + ana.stderr.strip()
    return json.loads(ana.stdout)["strategies"][0]["peak_bytes"], None


def gen_peak(memplan, model, shape, grads, optimizer, keep):
    """The liveness peak of memplan gen's twin of the model (PyTorch's lowering)."""
    fd, path = tempfile.mkstemp(suffix=".json", dir=keep)
    os.close(fd)
    cmd = [memplan, "gen", model, "--batch", str(shape[0]), "--optimizer", optimizer, "--grads", grads,
           "--framework", "pytorch", "-o", path]
    if len(shape) == 4:
        cmd[3:3] = ["--image", "%dx%d" % (shape[2], shape[3])]
    try:
        gen = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, universal_newlines=True)
        if gen.returncode != 0:
            return None, "memplan gen: " + gen.stderr.strip()
        return liveness_peak(memplan, path)
    finally:
        if not keep:
            os.unlink(path)


def run_one(memplan, spec, shape, grads, optimizer, keep):
    t0 = time.time()
    torch.manual_seed(0)
    model = mt.load_model(spec)
    x = torch.randn(shape)
    net = mt.export(model, [x], optimizer=optimizer, grads=grads, name=spec)
    fd, path = tempfile.mkstemp(suffix=".json", dir=keep)
    with os.fdopen(fd, "w") as f:
        f.write(mt.dumps(net))
    try:
        mp, err = liveness_peak(memplan, path)
        if err:
            return None, None, time.time() - t0, err
    finally:
        if not keep:
            os.unlink(path)
    del model, net
    torch.manual_seed(0)
    model = mt.load_model(spec)
    x = torch.randn(shape)
    target = None
    with torch.no_grad():
        out = model(x)
    target = mt.make_target("cross_entropy", out)
    del out
    tp = mt.measure_peak(model, [x], target, optimizer=optimizer, grads=grads)
    return tp, mp, time.time() - t0, None


def main(argv=None):
    ap = argparse.ArgumentParser(description="memplan's liveness peak against PyTorch's measured peak")
    ap.add_argument("models", nargs="+", metavar="MODULE:CALLABLE:SHAPE[=GEN]")
    ap.add_argument("--memplan", default="./memplan")
    ap.add_argument("--tolerance", type=float, default=2.0, help="percent (default 2)")
    ap.add_argument("--grads", default="set_to_none,keep")
    ap.add_argument("--optimizer", default="momentum")
    ap.add_argument("--keep", help="keep the exported nets in this directory")
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args(argv)
    torch.set_num_threads(a.threads)
    bad = 0
    print("%-44s %5s %-11s %14s %14s %8s %14s %9s %7s" % ("model", "batch", "grads", "torch_peak",
                                                         "memplan_peak", "ratio", "gen_peak", "gen_ratio",
                                                         "seconds"))
    for m in a.models:
        m, _, twin = m.partition("=")
        spec, _, shape = m.rpartition(":")
        try:
            dims = mt.parse_shape(shape)
        except mt.ExportError as e:
            print("torch_fidelity: %s: %s" % (m, e), file=sys.stderr)
            return 2
        for grads in a.grads.split(","):
            try:
                tp, mp, secs, err = run_one(a.memplan, spec, dims, grads, a.optimizer, a.keep)
            except mt.ExportError as e:
                tp, mp, secs, err = None, None, 0.0, str(e)
            if err:
                print("%-44s %5d %-11s %s FAIL" % (spec, dims[0], grads, err))
                bad += 1
                continue
            ratio = mp / tp
            ok = abs(ratio - 1) * 100 <= a.tolerance
            gp, gr = "-", "-"
            if twin:
                g, err = gen_peak(a.memplan, twin, dims, grads, a.optimizer, a.keep)
                if err:
                    print("%-44s %5d %-11s %s FAIL" % (spec, dims[0], grads, err))
                    bad += 1
                    continue
                gp, gr = str(g), "%.4f" % (g / tp)
                ok = ok and abs(g / tp - 1) * 100 <= a.tolerance
            bad += not ok
            print("%-44s %5d %-11s %14d %14d %8.4f %14s %9s %7.1f %s" % (spec, dims[0], grads, tp, mp, ratio,
                                                                         gp, gr, secs, "ok" if ok else "FAIL"))
            sys.stdout.flush()
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
