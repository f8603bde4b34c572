"""Functional optimizers: ``state = opt.init(params)``; ``params, state = opt.update(params, grads, state)``.

The state (moments) lives in the parameters' layouts, so an update is local
to each shard: no communication. ``lr`` is a number or a schedule
``step -> lr`` (the step counts from 1). Params, grads and state are paired
by key path (``sa.tree``), so a dict in another key order updates each
parameter with its own gradient; within a leaf, a positional gradient (or
moment, or master copy) pairs with its parameter by axis, whatever its
internal dim names (``g.T.T``, ``xp.reshape(g, w.shape)``), and a named one
by dim name, in any dim order. Moments and update arithmetic of a
low-precision parameter (a float narrower than float32: float16, bfloat16)
are float32, and such a parameter is updated through a float32 master copy
in the state (``master_dtype="float32"``, the default; ``None`` turns it off);
the new parameter is the master rounded once to its dtype.

Complex parameters (complex64, complex128) are updated as PyTorch's
optimizers do: as two real parameters, the real and imaginary parts (the
update on ``torch.view_as_real(p)``), from a complex gradient
``dL/dRe + 1j * dL/dIm`` (PyTorch's ``z.grad``; ``jax.grad`` gives its
conjugate). Their moments are complex (Adam's ``v`` holds the two parts'
second moments as ``Re(g)**2 + 1j * Im(g)**2``) and checkpoint as any array.
``sa.value_and_grad`` differentiates real parameters only: differentiate
the parts as two real parameters and pass ``g_re + 1j * g_im``.

Mixed precision: ``clip_by_global_norm(grads, max_norm)`` and
``DynamicLossScale`` (float16) each use one allreduce for all gradients.

One concept a module: ``sgd``, ``adam``, ``schedule``, ``master`` (master
copies), ``clip``, ``loss_scale``, ``reduce_tree`` (one collective for a tree).
"""

from .adam import Adam
from .adam import _fused as _fused  # the fused-kernel test (tests/optim/test_optim_tree.py)
from .clip import clip_by_global_norm, global_norm
from .common import moment_dtype
from .loss_scale import DynamicLossScale
from .schedule import cosine_schedule
from .sgd import SGD

__all__ = ["SGD", "Adam", "DynamicLossScale", "clip_by_global_norm", "cosine_schedule", "global_norm", "moment_dtype"]
