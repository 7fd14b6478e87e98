"""Which indexing and formatting forms synchronize, per torch.cuda.set_sync_debug_mode."""
import torch, warnings
x = torch.randn(1024, device="cuda"); m = x > 0; v = torch.randn(1024, device="cuda")
idx = torch.arange(0, 10, device="cuda")
cases = {
    "x[mask] = 0 (python scalar)": lambda: x.__setitem__(m, 0),
    "x[mask] = 0.5": lambda: x.__setitem__(m, 0.5),
    "x[mask] = tensor 0-dim": lambda: x.__setitem__(m, torch.tensor(0.0, device="cuda")),
    "x[mask] = v[mask]": lambda: x.__setitem__(m, v[m]),
    "x[mask] += 1": lambda: x.__setitem__(m, x[m] + 1),
    "x.masked_fill_(mask, 0)": lambda: x.masked_fill_(m, 0),
    "x[idx] = 0 (long index)": lambda: x.__setitem__(idx, 0),
    "x[idx] = v[:10]": lambda: x.__setitem__(idx, v[:10]),
    "x[3] = 1.0": lambda: x.__setitem__(3, 1.0),
    "f-string of tensor": lambda: f"{x[:2]}",
    "print-like str()": lambda: str(x[:2]),
    "torch.where(mask) (1 arg)": lambda: torch.where(m),
    "x[mask] read": lambda: x[m],
    "x.new_tensor([1,2])": lambda: x.new_tensor([1, 2]),
    "x.type(torch.LongTensor)": lambda: x.type(torch.LongTensor),
    "torch.repeat_interleave(x, idx)": lambda: torch.repeat_interleave(v[:10], idx),
}
torch.cuda.synchronize()
for name, fn in cases.items():
    torch.cuda.set_sync_debug_mode("warn")
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        fn()
    torch.cuda.set_sync_debug_mode("default")
    torch.cuda.synchronize()
    synced = any("synchroniz" in str(i.message) for i in w)
    print(f"{'SYNC ' if synced else 'none '} {name}")
print(torch.__version__)
