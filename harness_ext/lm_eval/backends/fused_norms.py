"""RMS normalisation in one kernel during `biasmonkey-hf`'s forwards (model argument `fuse_norms`).

transformers' RMSNorm modules (Llama, Mistral, Qwen, SmolLM, OLMo 2, ...) normalise in a chain of
element-wise operations: the hidden states cast to float32, squared, averaged, the inverse square
root, a product, a cast back and a product with the weight: eight kernels, six of them reading the
whole tensor, two norms per layer. On an H100 (random Llama of the 1.7B shape, few-shot yes-no),
memory-bound element-wise work of this kind (normalisation, activations, residuals) took about a
third of the device's time. PyTorch's `torch.nn.functional.rms_norm` does the same on CUDA in one fused kernel
(input and weight of one dtype), accumulating in float32.

A norm class is fused only when its own forward and `F.rms_norm` agree on probe rows (of small,
unit and large scale, inside the forwards' context, autocast included): classes with another
formula, such as Gemma's `(1 + weight)`, or another output dtype, keep their own forward. The fused
forward rounds once where transformers' rounds twice (the normalised states to the input dtype,
then the product with the weight), so in bfloat16 a norm's output may differ by one unit in the last
place; in float32 they agree to rounding.

The fused forwards are set on the modules' instances only while `biasmonkey-hf` runs its own
forwards (`installed`); lm-eval's stock code, which the backend calls for what its path does not
cover, and anything else that uses the model runs its own forwards.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator

import torch
import torch.nn.functional as F

log = logging.getLogger(__name__)

Forward = Callable[[torch.Tensor], torch.Tensor]
FUSED_MARK = "_biasmonkey_fused_norm"  # set on our forwards, which an instance may carry while another looks
PROBE_SCALES = (1e-3, 1.0, 1e2)  # the probe rows' magnitudes: where eps matters, typical, large


def _epsilon(module: torch.nn.Module) -> float | None:
    for name in ("variance_epsilon", "eps"):
        value = getattr(module, name, None)
        if isinstance(value, float):
            return value
    return None


def _fused_forward(module: torch.nn.Module, eps: float) -> Forward:
    shape = (int(module.weight.shape[0]),)

    def forward(hidden_states: torch.Tensor) -> torch.Tensor:
        return F.rms_norm(hidden_states, shape, module.weight, eps)

    setattr(forward, FUSED_MARK, True)
    return forward


def _hooked(module: torch.nn.Module) -> bool:
    """Whether the instance carries a forward of its own other than ours (a hook's, e.g.
    accelerate's). Ours may be there: another instance's forwards on the same model (a warm-up
    thread's) are installed while this one looks."""
    own = vars(module).get("forward")
    return own is not None and not getattr(own, FUSED_MARK, False)


def _agrees(module: torch.nn.Module, forward: Forward) -> bool:
    """Whether `forward` gives what the module's own forward gives, on probe rows, to a few units
    in the last place of the output's dtype."""
    weight = module.weight
    generator = torch.Generator().manual_seed(0)
    rows = torch.randn(len(PROBE_SCALES), weight.shape[0], generator=generator)
    rows *= torch.tensor(PROBE_SCALES)[:, None]
    rows = rows.to(device=weight.device, dtype=weight.dtype)
    try:
        expected, got = type(module).forward(module, rows), forward(rows)  # the class's, not one installed
    except (RuntimeError, TypeError, ValueError):
        return False
    if got.dtype != expected.dtype or got.shape != expected.shape:
        return False
    tolerance = 4 * torch.finfo(expected.dtype).eps
    return bool(torch.allclose(got.float(), expected.float(), rtol=tolerance, atol=1e-6))


def fusable_norms(model: torch.nn.Module) -> list[tuple[torch.nn.Module, Forward]]:
    """The model's RMSNorm modules (class name ending in "RMSNorm", a 1-D weight, an epsilon, no
    forward set on the instance by a hook) whose class passed the probe on its first module, each
    with its fused forward. Run it inside the context the forwards run in (no gradients, autocast)."""
    verdicts: dict[type, bool] = {}
    fused: list[tuple[torch.nn.Module, Forward]] = []
    for module in model.modules():
        weight, eps = getattr(module, "weight", None), _epsilon(module)
        kind = type(module)
        if not kind.__name__.endswith("RMSNorm") or eps is None or _hooked(module):
            continue  # (a forward on the instance: a hook's, e.g. accelerate's, left alone)
        if not isinstance(weight, torch.Tensor) or weight.dim() != 1 or not weight.is_floating_point():
            continue
        forward = _fused_forward(module, eps)
        if kind not in verdicts:
            verdicts[kind] = _agrees(module, forward)
            if not verdicts[kind]:
                log.info("biasmonkey-hf: %s keeps its own forward (not the formula of F.rms_norm)", kind.__name__)
        if verdicts[kind]:
            fused.append((module, forward))
    return fused


@contextlib.contextmanager
def installed(norms: list[tuple[torch.nn.Module, Forward]]) -> Iterator[None]:
    """The fused forwards set on their modules' instances, removed on leaving."""
    for module, forward in norms:
        module.__dict__["forward"] = forward
    try:
        yield
    finally:
        for module, forward in norms:
            if module.__dict__.get("forward") is forward:
                del module.__dict__["forward"]
