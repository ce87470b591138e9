"""Shared rules of the graph dialect's verifiers: tensor types, broadcasting, axes, properties.

Every graph op checks its operands with these helpers, so that the same mistake reads the same way
in every op: a message names the offending operand (`operand #1 (w)`) or property
(`property 'perm'`) and says what was expected.

The type-inference functions of the ops (`SomeOp.infer_result_type`) raise `TypeInferenceError`.
It is both a `VerifyException`, so a verifier can let it propagate and xDSL reports it as a located
diagnostic, and a `ValueError`, which is what Python builders (the ONNX importer) expect from a
constructor given inconsistent operands. One function therefore defines each op's shape rules for
the parser, the verifier and the builders alike.

Tensor types are static, of a supported element type, and no larger than mlc's targets can
address (`buffer_limits.MAX_BUFFER_BYTES`).

Axes follow numpy: an axis `a` of a tensor of rank `r` is valid when `-r <= a < r`, and a negative
axis means `a + r`. Properties keep the axes as written; the ops' `normalized_*` accessors return
them normalised.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import DYNAMIC_INDEX, DenseArrayBase, TensorType, i64
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.utils.exceptions import VerifyException

from mlc.dialects.buffer_limits import buffer_size_problem
from mlc.dialects.element_types import SUPPORTED_ELEMENT_TYPES, is_bool, is_float


class TypeInferenceError(VerifyException, ValueError):
    """A violated shape or type rule: a diagnostic for verifiers, a ValueError for builders."""


def broadcast_shapes(lhs: Sequence[int], rhs: Sequence[int]) -> tuple[int, ...] | None:
    """numpy's broadcast of two shapes, or None when they are incompatible."""
    rank = max(len(lhs), len(rhs))
    padded_lhs = (1,) * (rank - len(lhs)) + tuple(lhs)
    padded_rhs = (1,) * (rank - len(rhs)) + tuple(rhs)
    result = []
    for left, right in zip(padded_lhs, padded_rhs):
        if left != right and left != 1 and right != 1:
            return None
        result.append(right if left == 1 else left)
    return tuple(result)


def format_shape(shape: Sequence[int]) -> str:
    return "x".join(str(d) for d in shape) if shape else "scalar"


def format_list(values: Sequence[int]) -> str:
    """Integers as the custom syntax prints an `array<i64>` property: `[1, -2]`."""
    return "[" + ", ".join(str(v) for v in values) + "]"


def verify_tensor_type(tensor_type: Attribute, role: str) -> TensorType:
    """Checks that `tensor_type` (of `role`, as messages call it) is a supported static tensor."""
    if not isinstance(tensor_type, TensorType):
        raise TypeInferenceError(f"{role} must be a tensor, got {tensor_type}")
    if any(dim == DYNAMIC_INDEX for dim in tensor_type.get_shape()):
        raise TypeInferenceError(
            f"{role} has a dynamic shape ({tensor_type}); mlc needs static shapes"
        )
    if tensor_type.element_type not in SUPPORTED_ELEMENT_TYPES:
        raise TypeInferenceError(
            f"{role} has unsupported element type {tensor_type.element_type} "
            "(supported: f32, f16, bf16, i32, i64, i1)"
        )
    too_large = buffer_size_problem(tensor_type.get_shape(), tensor_type.element_type, str(tensor_type))
    if too_large is not None:
        raise TypeInferenceError(f"{role}: {too_large}")
    return tensor_type


def verify_tensor(value: SSAValue, role: str) -> TensorType:
    """Checks that `value` (described as `role` in messages) is a supported static tensor."""
    return verify_tensor_type(value.type, role)


def require_float(tensor_type: TensorType, role: str) -> None:
    if not is_float(tensor_type.element_type):
        raise TypeInferenceError(
            f"{role} must have a float element type, got {tensor_type.element_type}"
        )


def require_not_bool(tensor_type: TensorType, role: str, op_name: str) -> None:
    if is_bool(tensor_type.element_type):
        raise TypeInferenceError(f"{role} of '{op_name}' must not be i1")


def require_same_element_type(
    tensor_type: TensorType, role: str, reference: TensorType, reference_role: str
) -> None:
    if tensor_type.element_type != reference.element_type:
        raise TypeInferenceError(
            f"{role} has element type {tensor_type.element_type}, but {reference_role} has "
            f"{reference.element_type}; both must be equal"
        )


def require_rank(tensor_type: TensorType, role: str, rank: int, layout: str) -> None:
    if tensor_type.get_num_dims() != rank:
        raise TypeInferenceError(
            f"{role} must have rank {rank} ({layout}), got {tensor_type}"
        )


def normalize_axis(
    axis: int, rank: int, description: str, role: str = "operand #0 (x)"
) -> int:
    """`axis` in `[0, rank)` by numpy's rule; `description` names it in messages."""
    if not -rank <= axis < rank:
        raise TypeInferenceError(
            f"{description} is out of range for {role} of rank {rank} "
            f"(expected {-rank} <= axis < {rank})"
        )
    return axis + rank if axis < 0 else axis


def normalize_axes(
    axes: Sequence[int], rank: int, property_name: str, role: str = "operand #0 (x)"
) -> tuple[int, ...]:
    """Each entry of property `property_name` normalised; an axis named twice is an error."""
    normalized = tuple(
        normalize_axis(axis, rank, f"entry {axis} of property '{property_name}'", role)
        for axis in axes
    )
    if len(set(normalized)) != len(normalized):
        raise TypeInferenceError(
            f"property '{property_name}' = {format_list(axes)} names an axis of {role} more "
            "than once"
        )
    return normalized


def require_length(values: Sequence[int], length: int, what: str, meaning: str) -> None:
    if len(values) != length:
        raise TypeInferenceError(
            f"{what} must have {length} entries ({meaning}), got {format_list(values)}"
        )


def require_at_least(values: Sequence[int], minimum: int, what: str) -> None:
    if any(value < minimum for value in values):
        adjective = "positive" if minimum == 1 else "non-negative"
        raise TypeInferenceError(f"{what} entries must be {adjective}, got {format_list(values)}")


def i64_array(values: Sequence[int]) -> DenseArrayBase:
    """An `array<i64: ...>` property."""
    return DenseArrayBase.from_list(i64, tuple(values))


def verify_result_type(op: Operation, expected: TensorType, description: str) -> None:
    """Compares the op's only result type with the type its operands and properties imply."""
    actual = op.results[0].type
    if actual != expected:
        raise VerifyException(
            f"result type {actual} does not match {description}; expected {expected}"
        )
