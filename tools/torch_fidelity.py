#!/usr/bin/python3
"""Compare memplan's liveness peak of an exported net with PyTorch's measured peak.

    python3 tools/torch_fidelity.py [--memplan ./memplan] [--tolerance 2] [--grads keep,set_to_none]
                                    [--optimizer momentum] [--keep DIR] [--autocast bf16]
                                    [--gen-args "ARGS"] MODEL:SHAPE[=GEN]...

MODEL is MODULE:CALLABLE (as for memplan_torch.py), SHAPE the input's, e.g.
torchvision.models:resnet18:8,3,224,224.  Per model and gradient mode, on
the CPU: a fresh model (seed 0) exported by memplan_torch (warm-up step, then
the recorded step), `memplan check` of the net, `memplan analyze --strategy
liveness --format json` for peak_bytes; another fresh model (seed 0) for
PyTorch's peak of one step after a warm-up step, from the profiler's memory
events (memplan_torch.measure_peak).  With =GEN, the liveness peak of
`memplan gen GEN --framework pytorch` at the same batch, image (a 4-D SHAPE's
last two dimensions), optimizer and gradient mode is a third peak, its
twin's; --gen-args adds arguments to that gen (a sequence length, a
precision).  --autocast bf16 runs every step's forward and loss under
torch.autocast.  Prints one line per run:

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


def small_llama():
    """A small Llama-style decoder, as Hugging Face's LlamaForCausalLM writes
    it in plain torch: 2 blocks of RMSNorm (float32 inside), q/k/v
    projections with grouped-query heads (4 heads, 2 kv-heads, head 32),
    rotary embeddings on q and k, eager causal attention (softmax in float32),
    o_proj, RMSNorm and a SwiGLU MLP (ffn 352); a final RMSNorm and an LM head
    over 1000 tokens, hidden 128.  torch_fidelity feeds random floats, so the
    token ids are derived from them ((|x| * 1000) mod 1000 of the first
    feature, an [N, S, 1] input); the logits come out as [N, vocab, S] for
    cross-entropy."""
    hidden, heads, kv_heads, ffn, vocab = 128, 4, 2, 352, 1000
    hd = hidden // heads

    class RMSNorm(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = torch.nn.Parameter(torch.ones(hidden))

        def forward(self, x):
            dt = x.dtype
            x = x.to(torch.float32)
            x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)
            return self.weight * x.to(dt)

    def rotate(x):
        a, b = x[..., :hd // 2], x[..., hd // 2:]
        return torch.cat((-b, a), dim=-1)

    class Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            lin = lambda i, o: torch.nn.Linear(i, o, bias=False)  # noqa: E731
            self.input_layernorm, self.post_attention_layernorm = RMSNorm(), RMSNorm()
            self.q_proj, self.k_proj = lin(hidden, hidden), lin(hidden, kv_heads * hd)
            self.v_proj, self.o_proj = lin(hidden, kv_heads * hd), lin(hidden, hidden)
            self.gate_proj, self.up_proj, self.down_proj = lin(hidden, ffn), lin(hidden, ffn), lin(ffn, hidden)

        def forward(self, x, cos, sin, mask):
            n, s, _ = x.shape
            h = self.input_layernorm(x)
            q = self.q_proj(h).view(n, s, heads, hd).transpose(1, 2)
            k = self.k_proj(h).view(n, s, kv_heads, hd).transpose(1, 2)
            v = self.v_proj(h).view(n, s, kv_heads, hd).transpose(1, 2)
            q, k = q * cos + rotate(q) * sin, k * cos + rotate(k) * sin
            rep = heads // kv_heads
            k = k[:, :, None].expand(n, kv_heads, rep, s, hd).reshape(n, heads, s, hd)
            v = v[:, :, None].expand(n, kv_heads, rep, s, hd).reshape(n, heads, s, hd)
            w = torch.matmul(q, k.transpose(2, 3)) / hd ** 0.5 + mask
            w = torch.softmax(w, dim=-1, dtype=torch.float32).to(q.dtype)
            o = torch.matmul(w, v).transpose(1, 2).reshape(n, s, hidden)
            x = x + self.o_proj(o)
            h = self.post_attention_layernorm(x)
            return x + self.down_proj(torch.nn.functional.silu(self.gate_proj(h)) * self.up_proj(h))

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.embed_tokens = torch.nn.Embedding(vocab, hidden)
            self.layers = torch.nn.ModuleList([Block(), Block()])
            self.norm = RMSNorm()
            self.lm_head = torch.nn.Linear(hidden, vocab, bias=False)

        def forward(self, x):
            ids = (x[..., 0].abs() * 1000).long() % vocab
            s = ids.shape[1]
            pos = torch.arange(s, device=x.device, dtype=torch.float32)
            inv = 1.0 / (10000 ** (torch.arange(0, hd, 2, device=x.device, dtype=torch.float32) / hd))
            f = torch.outer(pos, inv)
            e = torch.cat((f, f), dim=-1)
            cos, sin = e.cos(), e.sin()
            mask = torch.full((s, s), float("-inf"), device=x.device).triu(1)
            h = self.embed_tokens(ids)
            for layer in self.layers:
                h = layer(h, cos, sin, mask)
            return self.lm_head(self.norm(h)).float().transpose(1, 2)
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


def gen_peak(memplan, model, shape, grads, optimizer, keep, extra=()):
    """The liveness peak of memplan gen's twin of the model (PyTorch's lowering)."""
    fd, path = tempfile.mkstemp(suffix=".json", dir=keep)
    os.close(fd)
    cmd = [memplan, "gen", model, "--batch", str(shape[0]), "--optimizer", optimizer, "--grads", grads,
           "--framework", "pytorch", "-o", path] + list(extra)
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


def run_one(memplan, spec, shape, grads, optimizer, keep, autocast=None):
    t0 = time.time()
    torch.manual_seed(0)
    model = mt.load_model(spec)
    x = torch.randn(shape)
    net = mt.export(model, [x], optimizer=optimizer, grads=grads, name=spec, autocast=autocast)
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
    tp = mt.measure_peak(model, [x], target, optimizer=optimizer, grads=grads, autocast=autocast)
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
    ap.add_argument("--autocast", help="bf16: forward and loss under torch.autocast (CPU: bf16 only)")
    ap.add_argument("--gen-args", default="", help="more memplan gen arguments for the twins (one string)")
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
                tp, mp, secs, err = run_one(a.memplan, spec, dims, grads, a.optimizer, a.keep, a.autocast)
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
                g, err = gen_peak(a.memplan, twin, dims, grads, a.optimizer, a.keep, a.gen_args.split())
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
