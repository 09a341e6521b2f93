"""Usage: compare_runs.py REFERENCE RUN STEP {params|losses} [--all-steps] [--tol=T]

Compares two trident-worker output folders: the rank-0 losses in RUN/metrics.jsonl must equal
those of REFERENCE within T relative (default 1e-5; every step RUN has; with --all-steps RUN
must hold exactly steps 1..STEP), and with `params` so must every tensor of their checkpoints
ckpt/step-STEP.safetensors (relative to the tensor's largest value). Exits with the first
difference as its message.
"""
import json
import struct
import sys


def losses(folder):
    rows = [json.loads(line) for line in open(folder + "/metrics.jsonl")]
    return {r["step"]: r["loss"] for r in rows if r["rank"] == 0}


def tensors(path):
    b = open(path, "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    header = json.loads(b[8:8 + n])
    header.pop("__metadata__", None)
    out = {}
    for name, v in header.items():
        s, e = v["data_offsets"]
        out[name] = struct.unpack("<%df" % ((e - s) // 4), b[8 + n + s:8 + n + e])
    return out


def main(ref, got, step, mode, *flags):
    step = int(step)
    tol = float(next((f[6:] for f in flags if f.startswith("--tol=")), "1e-5"))
    a, b = losses(ref), losses(got)
    if not b:
        sys.exit("no losses")
    if "--all-steps" in flags and sorted(b) != list(range(1, step + 1)):
        sys.exit(f"steps {sorted(b)}, expected 1..{step}")
    for k in b:
        if abs(a[k] - b[k]) > tol * abs(a[k]):
            sys.exit(f"step {k}: loss {b[k]!r}, reference {a[k]!r}")
    if mode != "params":
        return
    ta = tensors(f"{ref}/ckpt/step-{step}.safetensors")
    tb = tensors(f"{got}/ckpt/step-{step}.safetensors")
    if ta.keys() != tb.keys():
        sys.exit(f"tensors differ: {sorted(ta.keys() ^ tb.keys())[:4]}")
    for k in ta:
        scale = max(1e-6, max(abs(x) for x in ta[k]))
        err = max(abs(x - y) for x, y in zip(ta[k], tb[k]))
        if err > tol * scale:
            sys.exit(f"{k}: max difference {err:.3g} of scale {scale:.3g}")


if __name__ == "__main__":
    main(*sys.argv[1:])
