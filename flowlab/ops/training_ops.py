"""The fused optimizer update ops of TensorFlow's `training_ops` (ApplyAdam, ...).

Each op takes its variable and the optimizer's slot variables as references
(`Ref(T)`), the hyper-parameters as scalars and the gradient, and updates the
variables in place (through the step's undo log); its output is the variable's
reference again.  `Sparse*` variants take a gradient for the rows `indices` of the
variable and touch only those rows.  Names, inputs, attrs and defaults are
TensorFlow's; the formulas are those of TensorFlow's CPU kernels
(flowlab/kernels/training_kernels.py).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flowlab.graph.tensor import Operation
from flowlab.graph.tensor_shape import TensorShape
from flowlab.ops.builder import apply_op
from flowlab.ops.gradient_registry import not_differentiable
from flowlab.ops.op_def import op_def
from flowlab.ops.state_ops import merge_shapes

__all__: list[str] = []

# op type -> (slot inputs after var, scalar inputs before grad, scalar inputs after grad)
_DENSE: dict[str, tuple[list[str], list[str], list[str]]] = {
    "ApplyGradientDescent": ([], ["alpha"], []),
    "ApplyMomentum": (["accum"], ["lr"], ["momentum"]),
    "ApplyAdagrad": (["accum"], ["lr"], []),
    "ApplyAdadelta": (["accum", "accum_update"], ["lr", "rho", "epsilon"], []),
    "ApplyRMSProp": (["ms", "mom"], ["lr", "rho", "momentum", "epsilon"], []),
    "ApplyCenteredRMSProp": (["mg", "ms", "mom"], ["lr", "rho", "momentum", "epsilon"], []),
    "ApplyAdam": (["m", "v"], ["beta1_power", "beta2_power", "lr", "beta1", "beta2", "epsilon"], []),
}
_SPARSE = ("ApplyMomentum", "ApplyAdagrad", "ApplyAdadelta", "ApplyRMSProp", "ApplyCenteredRMSProp")
_EXTRA_ATTRS = {
    "ApplyMomentum": ["use_nesterov: bool = false"],
    "ApplyAdam": ["use_nesterov: bool = false"],
    "ApplyAdagrad": ["update_slots: bool = true"],
}


def _shape_fn(slots: list[str], scalars: list[str], sparse: bool) -> Any:
    n_refs = 1 + len(slots)

    def fn(op: Operation) -> list[TensorShape]:
        ins = op.inputs
        s = ins[0].shape
        for i in range(1, n_refs):
            s = merge_shapes(s, ins[i].shape)
        grad_pos = n_refs + len(scalars)
        for i, t in enumerate(ins):
            if i < n_refs or i in (grad_pos, grad_pos + 1 if sparse else -1):
                continue
            r = t.shape.ndims
            if r not in (None, 0):
                raise ValueError(f"Shape must be rank 0 but is rank {r}")
        grad = ins[grad_pos].shape
        if not sparse:
            s = merge_shapes(s, grad)
        else:
            idx = ins[grad_pos + 1].shape
            if idx.ndims not in (None, 1):
                raise ValueError(f"Shape must be rank 1 but is rank {idx.ndims}")
            if grad.ndims is not None and s.ndims is not None:
                if grad.ndims == 0:
                    raise ValueError("Shape must be at least rank 1 but is rank 0")
                merge_shapes(TensorShape(s.as_tuple()[1:]), TensorShape(grad.as_tuple()[1:]))  # type: ignore[index]
                n, m = (idx.as_tuple()[0] if idx.ndims == 1 else None), grad.as_tuple()[0]  # type: ignore[index]
                if n is not None and m is not None and n != m:
                    raise ValueError(f"Dimensions must be equal, but are {n} and {m}")
        return [s]

    return fn


def _declare(table: dict[str, tuple[list[str], list[str], list[str]]], sparse: set[str],
             extra_attrs: Callable[[str], list[str]]) -> None:
    """Declare each update op of `table` (and its Sparse twin for those in `sparse`)."""
    for op_type, (slots, before, after) in table.items():
        extra = extra_attrs(op_type)
        refs = [f"{n}: Ref(T)" for n in ["var", *slots]]
        scal_before = [f"{n}: T" for n in before]
        scal_after = [f"{n}: {'int64' if n == 'global_step' else 'T'}" for n in after]
        grad = "delta: T" if op_type in ("ApplyGradientDescent", "ApplyProximalGradientDescent") else "grad: T"
        op_def(
            op_type, inputs=refs + scal_before + [grad] + scal_after, outputs=["out: Ref(T)"],
            attrs=["T: numeric", "use_locking: bool = false", *extra],
            shape_fn=_shape_fn(slots, before, False), stateful=True,
            doc=f"Update var (and its slots) as TensorFlow's {op_type} kernel.",
        )
        not_differentiable(op_type)
        if op_type in sparse:
            sp = "Sparse" + op_type
            op_def(
                sp, inputs=refs + scal_before + ["grad: T", "indices: Tindices"] + scal_after,
                outputs=["out: Ref(T)"],
                attrs=["T: numeric", "Tindices: {int32, int64}", "use_locking: bool = false", *extra],
                shape_fn=_shape_fn(slots, before, True), stateful=True,
                doc=f"{op_type} for the rows `indices` of var only.",
            )
            not_differentiable(sp)


_declare(_DENSE, set(_SPARSE), lambda t: _EXTRA_ATTRS.get(t, []))


def _apply(op_type: str, name: str | None, **kwargs: Any) -> Any:
    return apply_op(op_type, name=name or op_type, **kwargs)


def apply_gradient_descent(var: Any, alpha: Any, delta: Any, use_locking: bool = False,
                           name: str | None = None) -> Any:
    return _apply("ApplyGradientDescent", name, var=var, alpha=alpha, delta=delta, use_locking=use_locking)


def apply_momentum(var: Any, accum: Any, lr: Any, grad: Any, momentum: Any, use_locking: bool = False,
                   use_nesterov: bool = False, name: str | None = None) -> Any:
    return _apply("ApplyMomentum", name, var=var, accum=accum, lr=lr, grad=grad, momentum=momentum,
                  use_locking=use_locking, use_nesterov=use_nesterov)


def sparse_apply_momentum(var: Any, accum: Any, lr: Any, grad: Any, indices: Any, momentum: Any,
                          use_locking: bool = False, use_nesterov: bool = False, name: str | None = None) -> Any:
    return _apply("SparseApplyMomentum", name, var=var, accum=accum, lr=lr, grad=grad, indices=indices,
                  momentum=momentum, use_locking=use_locking, use_nesterov=use_nesterov)


def apply_adagrad(var: Any, accum: Any, lr: Any, grad: Any, use_locking: bool = False,
                  update_slots: bool = True, name: str | None = None) -> Any:
    return _apply("ApplyAdagrad", name, var=var, accum=accum, lr=lr, grad=grad, use_locking=use_locking,
                  update_slots=update_slots)


def sparse_apply_adagrad(var: Any, accum: Any, lr: Any, grad: Any, indices: Any, use_locking: bool = False,
                         update_slots: bool = True, name: str | None = None) -> Any:
    return _apply("SparseApplyAdagrad", name, var=var, accum=accum, lr=lr, grad=grad, indices=indices,
                  use_locking=use_locking, update_slots=update_slots)


def apply_adadelta(var: Any, accum: Any, accum_update: Any, lr: Any, rho: Any, epsilon: Any, grad: Any,
                   use_locking: bool = False, name: str | None = None) -> Any:
    return _apply("ApplyAdadelta", name, var=var, accum=accum, accum_update=accum_update, lr=lr, rho=rho,
                  epsilon=epsilon, grad=grad, use_locking=use_locking)


def sparse_apply_adadelta(var: Any, accum: Any, accum_update: Any, lr: Any, rho: Any, epsilon: Any,
                          grad: Any, indices: Any, use_locking: bool = False, name: str | None = None) -> Any:
    return _apply("SparseApplyAdadelta", name, var=var, accum=accum, accum_update=accum_update, lr=lr,
                  rho=rho, epsilon=epsilon, grad=grad, indices=indices, use_locking=use_locking)


def apply_rms_prop(var: Any, ms: Any, mom: Any, lr: Any, rho: Any, momentum: Any, epsilon: Any, grad: Any,
                   use_locking: bool = False, name: str | None = None) -> Any:
    return _apply("ApplyRMSProp", name, var=var, ms=ms, mom=mom, lr=lr, rho=rho, momentum=momentum,
                  epsilon=epsilon, grad=grad, use_locking=use_locking)


def sparse_apply_rms_prop(var: Any, ms: Any, mom: Any, lr: Any, rho: Any, momentum: Any, epsilon: Any,
                          grad: Any, indices: Any, use_locking: bool = False, name: str | None = None) -> Any:
    return _apply("SparseApplyRMSProp", name, var=var, ms=ms, mom=mom, lr=lr, rho=rho, momentum=momentum,
                  epsilon=epsilon, grad=grad, indices=indices, use_locking=use_locking)


def apply_centered_rms_prop(var: Any, mg: Any, ms: Any, mom: Any, lr: Any, rho: Any, momentum: Any,
                            epsilon: Any, grad: Any, use_locking: bool = False, name: str | None = None) -> Any:
    return _apply("ApplyCenteredRMSProp", name, var=var, mg=mg, ms=ms, mom=mom, lr=lr, rho=rho,
                  momentum=momentum, epsilon=epsilon, grad=grad, use_locking=use_locking)


def sparse_apply_centered_rms_prop(var: Any, mg: Any, ms: Any, mom: Any, lr: Any, rho: Any, momentum: Any,
                                   epsilon: Any, grad: Any, indices: Any, use_locking: bool = False,
                                   name: str | None = None) -> Any:
    return _apply("SparseApplyCenteredRMSProp", name, var=var, mg=mg, ms=ms, mom=mom, lr=lr, rho=rho,
                  momentum=momentum, epsilon=epsilon, grad=grad, indices=indices, use_locking=use_locking)


def apply_adam(var: Any, m: Any, v: Any, beta1_power: Any, beta2_power: Any, lr: Any, beta1: Any,
               beta2: Any, epsilon: Any, grad: Any, use_locking: bool = False, use_nesterov: bool = False,
               name: str | None = None) -> Any:
    return _apply("ApplyAdam", name, var=var, m=m, v=v, beta1_power=beta1_power, beta2_power=beta2_power,
                  lr=lr, beta1=beta1, beta2=beta2, epsilon=epsilon, grad=grad, use_locking=use_locking,
                  use_nesterov=use_nesterov)


# --- the proximal family (FTRL, proximal GD/Adagrad, Adagrad dual averaging) ---------
# op type -> (slot inputs after var, scalar inputs before grad, scalar inputs after grad
# [and indices]), TensorFlow's input order; "global_step" is int64, the others T.
_PROXIMAL: dict[str, tuple[list[str], list[str], list[str]]] = {
    "ApplyFtrl": (["accum", "linear"], [], ["lr", "l1", "l2", "lr_power"]),
    "ApplyFtrlV2": (["accum", "linear"], [], ["lr", "l1", "l2", "l2_shrinkage", "lr_power"]),
    "ApplyProximalGradientDescent": ([], ["alpha", "l1", "l2"], []),
    "ApplyProximalAdagrad": (["accum"], ["lr", "l1", "l2"], []),
    "ApplyAdagradDA": (["gradient_accumulator", "gradient_squared_accumulator"], [], ["lr", "l1", "l2", "global_step"]),
}


_declare(_PROXIMAL, set(_PROXIMAL),
         lambda t: ["multiply_linear_by_lr: bool = false"] if "Ftrl" in t else [])


def apply_ftrl(var: Any, accum: Any, linear: Any, grad: Any, lr: Any, l1: Any, l2: Any, lr_power: Any,
               use_locking: bool = False, multiply_linear_by_lr: bool = False, name: str | None = None) -> Any:
    return _apply("ApplyFtrl", name, var=var, accum=accum, linear=linear, grad=grad, lr=lr, l1=l1, l2=l2,
                  lr_power=lr_power, use_locking=use_locking, multiply_linear_by_lr=multiply_linear_by_lr)


def sparse_apply_ftrl(var: Any, accum: Any, linear: Any, grad: Any, indices: Any, lr: Any, l1: Any, l2: Any,
                      lr_power: Any, use_locking: bool = False, multiply_linear_by_lr: bool = False,
                      name: str | None = None) -> Any:
    return _apply("SparseApplyFtrl", name, var=var, accum=accum, linear=linear, grad=grad, indices=indices,
                  lr=lr, l1=l1, l2=l2, lr_power=lr_power, use_locking=use_locking,
                  multiply_linear_by_lr=multiply_linear_by_lr)


def apply_ftrl_v2(var: Any, accum: Any, linear: Any, grad: Any, lr: Any, l1: Any, l2: Any, l2_shrinkage: Any,
                  lr_power: Any, use_locking: bool = False, multiply_linear_by_lr: bool = False,
                  name: str | None = None) -> Any:
    return _apply("ApplyFtrlV2", name, var=var, accum=accum, linear=linear, grad=grad, lr=lr, l1=l1, l2=l2,
                  l2_shrinkage=l2_shrinkage, lr_power=lr_power, use_locking=use_locking,
                  multiply_linear_by_lr=multiply_linear_by_lr)


def sparse_apply_ftrl_v2(var: Any, accum: Any, linear: Any, grad: Any, indices: Any, lr: Any, l1: Any, l2: Any,
                         l2_shrinkage: Any, lr_power: Any, use_locking: bool = False,
                         multiply_linear_by_lr: bool = False, name: str | None = None) -> Any:
    return _apply("SparseApplyFtrlV2", name, var=var, accum=accum, linear=linear, grad=grad, indices=indices,
                  lr=lr, l1=l1, l2=l2, l2_shrinkage=l2_shrinkage, lr_power=lr_power, use_locking=use_locking,
                  multiply_linear_by_lr=multiply_linear_by_lr)


def apply_proximal_gradient_descent(var: Any, alpha: Any, l1: Any, l2: Any, delta: Any, use_locking: bool = False,
                                    name: str | None = None) -> Any:
    return _apply("ApplyProximalGradientDescent", name, var=var, alpha=alpha, l1=l1, l2=l2, delta=delta,
                  use_locking=use_locking)


def sparse_apply_proximal_gradient_descent(var: Any, alpha: Any, l1: Any, l2: Any, grad: Any, indices: Any,
                                           use_locking: bool = False, name: str | None = None) -> Any:
    return _apply("SparseApplyProximalGradientDescent", name, var=var, alpha=alpha, l1=l1, l2=l2, grad=grad,
                  indices=indices, use_locking=use_locking)


def apply_proximal_adagrad(var: Any, accum: Any, lr: Any, l1: Any, l2: Any, grad: Any, use_locking: bool = False,
                           name: str | None = None) -> Any:
    return _apply("ApplyProximalAdagrad", name, var=var, accum=accum, lr=lr, l1=l1, l2=l2, grad=grad,
                  use_locking=use_locking)


def sparse_apply_proximal_adagrad(var: Any, accum: Any, lr: Any, l1: Any, l2: Any, grad: Any, indices: Any,
                                  use_locking: bool = False, name: str | None = None) -> Any:
    return _apply("SparseApplyProximalAdagrad", name, var=var, accum=accum, lr=lr, l1=l1, l2=l2, grad=grad,
                  indices=indices, use_locking=use_locking)


def apply_adagrad_da(var: Any, gradient_accumulator: Any, gradient_squared_accumulator: Any, grad: Any, lr: Any,
                     l1: Any, l2: Any, global_step: Any, use_locking: bool = False, name: str | None = None) -> Any:
    return _apply("ApplyAdagradDA", name, var=var, gradient_accumulator=gradient_accumulator,
                  gradient_squared_accumulator=gradient_squared_accumulator, grad=grad, lr=lr, l1=l1, l2=l2,
                  global_step=global_step, use_locking=use_locking)


def sparse_apply_adagrad_da(var: Any, gradient_accumulator: Any, gradient_squared_accumulator: Any, grad: Any,
                            indices: Any, lr: Any, l1: Any, l2: Any, global_step: Any, use_locking: bool = False,
                            name: str | None = None) -> Any:
    return _apply("SparseApplyAdagradDA", name, var=var, gradient_accumulator=gradient_accumulator,
                  gradient_squared_accumulator=gradient_squared_accumulator, grad=grad, indices=indices, lr=lr,
                  l1=l1, l2=l2, global_step=global_step, use_locking=use_locking)
