"""One image classifier from timm or torchvision, built as their users build it: random weights,
`.eval()`, moved with `.to(device, dtype)` (CNNs also to channels_last), a fixed random batch,
on the zoo's harness. The held-out scripts beside it name the model; this runs it.

    main(__doc__, "regnety_008", source="timm", family="cnn")
"""

import torch

import _zoo


def main(doc: str, model_name: str, *, source: str, family: str, batch: int = 64,
         size: int = 224, tiny_size: int = 64, sized: bool = False, **kwargs):
    """sized: the model takes its input size (timm's ViTs, img_size), else it is built as is."""
    cnn = family == "cnn"
    a = _zoo.parse(doc, dtype="f16" if cnn else "bf16", iters=30)
    if a.tiny:
        batch, size = 2, tiny_size
    if source == "timm":
        import timm

        if sized:
            kwargs.setdefault("img_size", size)
        model = timm.create_model(model_name, pretrained=False, **kwargs)
    else:
        import torchvision

        model = getattr(torchvision.models, model_name)(weights=None, **kwargs)
    head = model.get_classifier() if hasattr(model, "get_classifier") else None
    if isinstance(head, torch.nn.Linear) and not head.weight.any():
        # timm zero-inits some heads (MLP-Mixer's): all-zero logits would make the zoo's check
        # of the served output against eager's compare nothing
        torch.nn.init.normal_(head.weight, std=0.02)
    model = model.eval().to(a.device, a.dtype)
    x = torch.randn(batch, 3, size, size).to(a.device, a.dtype)
    if cnn:
        model = model.to(memory_format=torch.channels_last)
        x = x.contiguous(memory_format=torch.channels_last)
    model = _zoo.maybe_compile(model, a)
    _zoo.bench(model_name, lambda: model(x), a, family=family, source=source, batch=batch,
               shape=[batch, 3, size, size])
