"""mlc-import-torch: a PyTorch model, through torch.export, as graph-dialect MLIR.

    mlc-import-torch mypackage.models:TinyMLP --example-shapes 2x8            print the module
    mlc-import-torch models.py:make_model --example-shapes 1x3x32x32 -o m.mlir
    mlc-import-torch mypackage.layers:attention --example-shapes 2x4x16x8 2x4x16x8 2x4x16x8:f16

`MODULE:NAME` names a Python module (dotted, importable from the current directory) or a `.py`
file, and in it an `nn.Module` instance, an `nn.Module` class or a function of no arguments that
returns a module (each called without arguments, the module put in eval mode), or any other
function of tensors (exported as it is). `--example-shapes` gives one `DxDx...[:dtype]` per input
(dtype f32 by default; f16, bf16, i32, i64, i1; a scalar is `:f32` or an empty shape); inputs are
seeded random tensors, since torch.export needs values only for their types. Parameters and
buffers become `graph.constant`s, or with `--parameters arguments` arguments before the inputs.
The module written parses with mlc-opt, which can lower it further. Errors (a name that does not
resolve, an op mlc does not map, a bad shape) are one line on stderr naming the cause; exit code 1.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import sys
from io import StringIO
from pathlib import Path
from typing import Any

from xdsl.printer import Printer

from mlc.errors import MlcError
from mlc.tools.cli import exit_code, write_result

DTYPES = ("f32", "f16", "bf16", "i32", "i64", "i1")


def _example_shape(text: str) -> tuple[tuple[int, ...], str]:
    dims, _, dtype = text.partition(":")
    dtype = dtype or "f32"
    if dtype not in DTYPES:
        raise argparse.ArgumentTypeError(f"unknown dtype '{dtype}' in '{text}' (use one of {', '.join(DTYPES)})")
    try:
        shape = tuple(int(d) for d in dims.split("x")) if dims else ()
    except ValueError:
        raise argparse.ArgumentTypeError(f"dimensions must be integers separated by 'x', got '{dims}'") from None
    if any(d < 0 for d in shape):
        raise argparse.ArgumentTypeError(f"dimensions must not be negative, got '{dims}'")
    return shape, dtype


def _arguments() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mlc-import-torch",
        description="export a PyTorch model to graph-dialect MLIR",
    )
    parser.add_argument(
        "target",
        metavar="MODULE:NAME",
        help="the model: module or file.py, then the name in it",
    )
    parser.add_argument("--example-shapes", nargs="*", type=_example_shape, default=[], metavar="DxD[:dtype]",
                        help="one shape (and dtype, default f32) per input")  # fmt: skip
    parser.add_argument("--parameters", choices=("constants", "arguments"), default="constants",
                        help="parameters and buffers as constants (default) or arguments")  # fmt: skip
    parser.add_argument("--seed", type=int, default=0, help="seed of the example inputs (default: 0)")
    parser.add_argument("-o", "--output-file", help="write the module here instead of stdout")
    parser.add_argument(
        "--print-op-generic",
        "--mlir-print-op-generic",
        action="store_true",
        help="print the generic form",
    )
    return parser


def _resolve(target: str) -> Any:
    location, separator, name = target.rpartition(":")
    if not separator or not location or not name:
        raise MlcError(f"expected MODULE:NAME, got '{target}'")
    try:
        if location.endswith(".py"):
            spec = importlib.util.spec_from_file_location(Path(location).stem, location)
            if spec is None or spec.loader is None or not Path(location).is_file():
                raise MlcError(f"cannot read {location}")
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
        else:
            sys.path.insert(0, str(Path.cwd()))
            module = importlib.import_module(location)
    except ImportError as error:
        raise MlcError(f"cannot import '{location}': {error}") from None
    if not hasattr(module, name):
        raise MlcError(f"'{location}' has no attribute '{name}'")
    return getattr(module, name)


def _model(obj: Any) -> Any:
    import inspect

    import torch

    if (
        isinstance(obj, type)
        and issubclass(obj, torch.nn.Module)
        or callable(obj)
        and not isinstance(obj, torch.nn.Module)
        and not inspect.signature(obj).parameters
    ):
        obj = obj()
    if isinstance(obj, torch.nn.Module):
        return obj.eval()
    if not callable(obj):
        raise MlcError(f"the target is a {type(obj).__name__}, not a module or a function")

    class Function(torch.nn.Module):
        def forward(self, *inputs: Any) -> Any:
            return obj(*inputs)

    return Function()


def _examples(shapes: list[tuple[tuple[int, ...], str]], seed: int) -> tuple[Any, ...]:
    import torch

    dtypes = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16, "i32": torch.int32,
              "i64": torch.int64, "i1": torch.bool}  # fmt: skip
    generator = torch.Generator().manual_seed(seed)
    examples = []
    for shape, dtype in shapes:
        if dtype in ("i32", "i64", "i1"):
            examples.append(torch.randint(0, 2, shape, generator=generator).to(dtypes[dtype]))
        else:
            examples.append(torch.randn(shape, generator=generator).to(dtypes[dtype]))
    return tuple(examples)


def main(argv: list[str] | None = None) -> int:
    return exit_code(lambda: _main(argv), "mlc-import-torch")


def _main(argv: list[str] | None) -> int:
    args = _arguments().parse_args(argv)
    from mlc.frontend.torch import import_exported, require_torch

    try:
        require_torch()
        import torch

        model = _model(_resolve(args.target))
        try:
            exported = torch.export.export(model, _examples(args.example_shapes, args.seed))
        except Exception as error:  # noqa: BLE001 - torch.export's own message says what it could not trace
            raise MlcError(f"torch.export failed: {str(error).strip().splitlines()[0]}") from None
        module = import_exported(exported, parameters=args.parameters)
    except MlcError as error:
        sys.stderr.write(f"mlc-import-torch: error: {args.target}: {error}\n")
        return 1
    text = StringIO()
    Printer(stream=text, print_generic_format=args.print_op_generic).print_op(module)
    text.write("\n")
    return write_result(text.getvalue(), args.output_file, "mlc-import-torch")


if __name__ == "__main__":
    sys.exit(main())
