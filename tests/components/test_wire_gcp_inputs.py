"""The wired resources' input TypedDicts say what pulumi-gcp's generated classes say, argument for argument.

Why: components/wire/gcp_inputs.py is what mypy checks every `gcp.Bucket(...)`, `gcp.Cluster(...)` call
against. Written or left by hand, it would drift from the installed pulumi-gcp: a renamed or retyped argument
would pass lint and fail at `pulumi up`, and an argument missing from it would be refused by mypy although
the provider takes it. This test derives each TypedDict again from the generated class's source (parsed,
not imported: importing `pulumi_gcp.compute` alone takes a second) and compares (the provider's, a subset
of `gcp.Provider`'s arguments, field by field). On a difference its message
is the class as it should read; `python -m tests.components.test_wire_gcp_inputs` prints the whole module
body to paste after a pulumi-gcp upgrade.
"""

from __future__ import annotations

import ast
import inspect
import re
from pathlib import Path

import pulumi_gcp

from components.wire import gcp, gcp_inputs

_PACKAGE = Path(pulumi_gcp.__file__).parent
_REQUIRED = re.compile(r"Missing required property '(\w+)'")


def _file_name(resource: str) -> str:
    """`bucketIAMMember` -> `bucket_iam_member`: the generated module of a type token's resource part."""
    name = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", resource[:1].upper() + resource[1:])
    return re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", name).lower()


class _Modern(ast.NodeTransformer):
    """The generated annotation as the TypedDict writes it: `X | None` for `Optional[X]`, builtins by name,
    and a nested block's `Union['XArgs', 'XArgsDict', 'outputs.X']` as the module's `XArgsDict` alone."""

    def __init__(self, module: str) -> None:
        self.module = module

    def visit_Subscript(self, node: ast.Subscript) -> ast.AST:
        self.generic_visit(node)
        name = ast.unparse(node.value)
        if name == "Optional":
            return ast.BinOp(node.slice, ast.BitOr(), ast.Constant(None))
        if name != "Union":
            return node
        members = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        quoted = [
            member.value for member in members if isinstance(member, ast.Constant) and isinstance(member.value, str)
        ]
        if quoted and len(quoted) == len(members):
            (args_dict,) = (name for name in quoted if name.endswith("ArgsDict"))
            return ast.Attribute(ast.Name(self.module), args_dict)
        union = members[0]
        for member in members[1:]:
            union = ast.BinOp(union, ast.BitOr(), member)
        return union

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        self.generic_visit(node)
        if isinstance(node.value, ast.Name) and node.value.id == "_builtins":
            return ast.Name(node.attr)
        return node


def _required(annotation: ast.AST) -> ast.AST:
    """`pulumi.Input[X | None]` -> `Required[pulumi.Input[X]]`: the generated class raises on None."""
    assert isinstance(annotation, ast.Subscript)
    inner = annotation.slice
    if isinstance(inner, ast.BinOp) and isinstance(inner.right, ast.Constant) and inner.right.value is None:
        annotation.slice = inner.left
    return ast.Subscript(ast.Name("Required"), annotation)


def derived_fields(token: str) -> dict[str, str]:
    """Each keyword argument of the generated class registered as `token`, and its annotation as derived."""
    module, resource = token.split(":")[1].split("/")
    return _class_fields(_PACKAGE / module / f"{_file_name(resource)}.py", module, token)


def _class_fields(source: Path, module: str, token: str) -> dict[str, str]:
    """The keyword arguments of the class in `source` decorated with `token`, `module`'s blocks by that name."""
    tree = ast.parse(source.read_text())
    resource_class = next(
        node
        for node in tree.body
        if isinstance(node, ast.ClassDef)
        and any(isinstance(d, ast.Call) and ast.literal_eval(d.args[0]) == token for d in node.decorator_list)
    )
    init = next(n for n in resource_class.body if isinstance(n, ast.FunctionDef) and n.name == "__init__")
    required = set(_REQUIRED.findall(ast.unparse(resource_class)))
    fields = {}
    for argument in init.args.args[3:]:  # after self, resource_name, opts
        if argument.arg == "__props__":
            continue
        assert argument.annotation is not None
        annotation = _Modern(module).visit(argument.annotation)
        fields[argument.arg] = ast.unparse(_required(annotation) if argument.arg in required else annotation)
    return fields


def wired_classes() -> list[type[gcp.GcpResource]]:
    return [
        value
        for value in vars(gcp).values()
        if inspect.isclass(value) and issubclass(value, gcp.GcpResource) and value is not gcp.GcpResource
    ]


def expected_source(resource: type[gcp.GcpResource]) -> str:
    generated = (resource.__doc__ or "").split("`")[1]
    lines = [
        f"class {resource.__name__}Inputs(TypedDict, total=False):",
        f'    """`{generated}`\'s keyword arguments."""',
        "",
    ]
    lines += [f"    {name}: {annotation}" for name, annotation in derived_fields(resource.TYPE).items()]
    return "\n".join(lines)


def test_every_wired_resource_has_its_inputs() -> None:
    """A wired resource without a TypedDict would take any input unchecked again."""
    missing = [cls.__name__ for cls in wired_classes() if not hasattr(gcp_inputs, f"{cls.__name__}Inputs")]
    assert not missing, missing


def test_each_typed_dict_matches_the_generated_class() -> None:
    """A TypedDict that drifted from pulumi-gcp lets a wrong input through, or refuses a right one."""
    for resource in wired_classes():
        typed = getattr(gcp_inputs, f"{resource.__name__}Inputs")
        # With postponed annotations each value is the source text, which TypedDict keeps as a ForwardRef.
        written = {
            name: ast.unparse(ast.parse(getattr(value, "__forward_arg__", value)))
            for name, value in typed.__annotations__.items()
        }
        assert written == derived_fields(resource.TYPE), expected_source(resource)
        assert typed.__total__ is False, resource.__name__


def test_the_provider_inputs_match_the_generated_provider() -> None:
    """`gcp.Provider` takes some 400 arguments; the TypedDict names the few the project sets, and each of those
    must read as the generated class's own, or a retyped `impersonate_service_account` would pass lint."""
    typed = gcp_inputs.GcpProviderInputs
    written = {name: ast.unparse(ast.parse(value.__forward_arg__)) for name, value in typed.__annotations__.items()}
    generated = _class_fields(_PACKAGE / "provider.py", "provider", "pulumi:providers:gcp")
    assert written, "no provider input is typed"
    assert written == {name: generated.get(name) for name in written}, {name: generated.get(name) for name in written}
    assert typed.__total__ is False


if __name__ == "__main__":
    print("\n\n\n".join(expected_source(resource) for resource in wired_classes()))
