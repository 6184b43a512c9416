"""Python callees and callers through values whose class the code declares: an attribute's annotation or the
class assigned to it, a property's or a method's return annotation, a loop over a typed list, a ``with``
target, a function nested in a method, a definition under a module-level ``if``.  Real files, the real
indexer and the real ``neighbors`` tool; each case also checks that nothing is guessed where the class is
a library's or unknown."""

from __future__ import annotations

from pathlib import Path

import pytest

from memtree_plugins.retrieval.graph import neighbors
from memtree_plugins.walkers.repo_index import index_directory

# Two classes with a method of the same name: the name alone is ambiguous, only the type tells.
MODELS = '''"""Models."""

import typing as t


class Response:
    def read(self) -> bytes:
        return b""

    def close(self) -> None:
        pass


class Request:
    def read(self) -> bytes:
        return b"req"

    def close(self) -> None:
        pass


class Params:
    def remove(self, key: str) -> "Params":
        return self


class Other:
    def remove(self, key: str) -> None:
        pass


class Sink:
    def flush(self) -> None:
        pass


class Problem(Exception):
    def show(self) -> None:
        pass


class Banner(Exception):
    def show(self) -> None:
        pass


def make_response() -> Response:
    return Response()


def all_requests() -> t.List[Request]:
    return [Request()]
'''

CLIENT = '''"""A client."""

import contextlib
import io
import typing as t

from .models import Banner, Params, Problem, Request, Response, make_response, all_requests


class Transport:
    def send(self, request: Request) -> Response:
        return Response()


class Client:
    params_decl: Params

    def __init__(self, transport: Transport, request: t.Optional[Request] = None) -> None:
        self.transport = transport
        self.request = request
        self.made = Params()
        self.log: io.StringIO = io.StringIO()
        self.either = Request()
        if transport is None:
            self.either = Response()
        self.by_name: t.Dict[str, Request] = {}
        self.maker = self.make_transport()

    def make_transport(self) -> Transport:
        return Transport()

    def via_attribute_from_a_method(self):
        return self.maker.send(Request())

    @property
    def params(self) -> Params:
        return Params()

    def fetch(self) -> Response:
        return self.transport.send(Request())

    def requests(self) -> t.List[Request]:
        return []

    def via_attribute(self):
        return self.transport.send(Request())

    def via_param_attribute(self):
        return self.request.read()

    def via_assigned_attribute(self):
        return self.made.remove("a")

    def via_declared_class_attribute(self):
        return self.params_decl.remove("a")

    def via_property(self):
        return self.params.remove("a")

    def via_method_result(self):
        response = self.fetch()
        response.read()
        return response

    async def via_awaited(self):
        response = await self.fetch()
        return response.close()

    def via_function_result(self):
        response = make_response()
        return response.read()

    def via_loop(self):
        for request in self.requests():
            request.close()
        for other in all_requests():
            other.read()

    def via_with(self):
        with Response() as response:
            return response.close()

    def via_nested(self):
        def inner():
            return self.fetch()
        return inner()

    def via_library_attribute(self):
        self.log.flush()

    def via_two_classes(self):
        return self.either.read()

    def via_declared_parameter(self, request: Request, flow):
        request = next(flow)  # another value of a declared Request
        return request.close()

    def via_except(self):
        try:
            self.fetch()
        except Problem as e:
            e.show()
        except Banner as e:
            e.show()

    def via_cast(self, thing):
        made = t.cast(Params, thing)
        return made.remove("a")

    @contextlib.contextmanager
    def stream(self) -> t.Iterator[Response]:
        yield Response()

    def via_contextmanager(self):
        with self.stream() as response:
            return response.close()

    def via_index(self, key):
        found = self.by_name[key]
        found.read()
        return self.by_name[key].close()

    def via_call_on_a_result(self):
        return self.fetch().read()

    def padding(self):
''' + "".join(f"        note_{i} = {i}  # long enough that each method is a chunk of its own\n" for i in range(60)) + '''
        return None
'''

PLATFORM = '''"""One definition per platform."""

import sys

if sys.platform == "win32":
    def terminal_size():
        return 80
else:
    def terminal_size():
        return 100


def width():
    return terminal_size()
'''


@pytest.fixture
def syms(app, project: Path) -> dict[str, str]:
    pkg = project / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "models.py").write_text(MODELS)
    (pkg / "client.py").write_text(CLIENT)
    (pkg / "platform.py").write_text(PLATFORM)
    index_directory(app, project)
    rows = app.store.query("SELECT json_extract(metadata, '$.symbol'), json_extract(metadata, '$.kind'), "
                           "json_extract(metadata, '$.path'), id FROM nodes WHERE kind = 'file_chunk' "
                           "AND status = 'live'")
    out = {s: i for s, _k, _p, i in rows if s}
    out.update({f"{Path(p).name}:{k}": i for s, k, p, i in rows if not s})
    return out


def _callees(app, syms: dict[str, str], name: str) -> set[str]:
    back = {v: k for k, v in syms.items()}
    got = neighbors(app, syms[name], direction="out", edge_kinds=["references"])
    return {back[n.id] for n in got.neighbors if "calls" in n.rels}


def _callers(app, syms: dict[str, str], name: str) -> set[str]:
    back = {v: k for k, v in syms.items()}
    got = neighbors(app, syms[name], direction="in", edge_kinds=["references"])
    return {back[n.id] for n in got.neighbors if "calls" in n.rels}


def test_an_attribute_holding_a_typed_parameter_calls_its_classs_method(app, syms) -> None:
    # ``self.transport = transport`` with ``transport: Transport``; ``self.request`` is Optional[Request]
    assert "Transport" in _callees(app, syms, "Client.via_attribute")
    assert _callees(app, syms, "Client.via_param_attribute") == {"Request"}


def test_an_attribute_assigned_or_declared_in_the_class_calls_its_classs_method(app, syms) -> None:
    assert _callees(app, syms, "Client.via_assigned_attribute") == {"Params"}  # self.made = Params()
    assert _callees(app, syms, "Client.via_declared_class_attribute") == {"Params"}  # params_decl: Params
    assert "Client.via_assigned_attribute" in _callers(app, syms, "Params")


def test_a_propertys_return_annotation_types_the_value(app, syms) -> None:
    assert _callees(app, syms, "Client.via_property") == {"Params"}


def test_a_variable_holding_a_methods_or_functions_result_calls_the_annotated_classs_method(app, syms) -> None:
    assert _callees(app, syms, "Client.via_method_result") == {"Client.fetch", "Response"}
    assert _callees(app, syms, "Client.via_awaited") == {"Client.fetch", "Response"}
    assert _callees(app, syms, "Client.via_function_result") == {"make_response", "Response"}
    assert {"Client.via_method_result", "Client.via_function_result"} <= _callers(app, syms, "Response")
    assert not _callers(app, syms, "Other")


def test_a_loop_over_a_typed_list_and_a_with_target_call_their_classs_methods(app, syms) -> None:
    assert _callees(app, syms, "Client.via_loop") == {"Client.requests", "all_requests", "Request"}
    assert _callees(app, syms, "Client.via_with") == {"Response"}


def test_a_function_nested_in_a_method_calls_through_the_methods_self(app, syms) -> None:
    assert "Client.fetch" in _callees(app, syms, "Client.via_nested")
    assert "Client.via_nested" in _callers(app, syms, "Client.fetch")


def test_a_definition_under_a_module_level_if_is_a_callee(app, syms) -> None:
    assert _callees(app, syms, "width") == {"platform.py:module_header"}


def test_a_library_class_or_two_classes_assigned_are_not_guessed_by_the_methods_name(app, syms) -> None:
    # ``self.log: io.StringIO``: flush is io's, not the one class here with a flush
    assert _callees(app, syms, "Client.via_library_attribute") == set()
    assert not _callers(app, syms, "Sink")
    # ``self.either`` is a Request or a Response: read is either one's, so neither is an edge
    assert _callees(app, syms, "Client.via_two_classes") == set()


def test_a_declared_parameter_keeps_its_type_and_a_handlers_name_is_its_exception(app, syms) -> None:
    assert _callees(app, syms, "Client.via_declared_parameter") == {"Request"}
    assert _callees(app, syms, "Client.via_except") == {"Client.fetch", "Problem", "Banner"}


def test_cast_a_contextmanagers_yield_an_index_and_a_call_on_a_result_type_the_value(app, syms) -> None:
    assert _callees(app, syms, "Client.via_cast") == {"Params"}
    assert _callees(app, syms, "Client.via_contextmanager") == {"Client.stream", "Response"}
    assert _callees(app, syms, "Client.via_index") == {"Request"}
    assert _callees(app, syms, "Client.via_call_on_a_result") == {"Client.fetch", "Response"}


def test_an_attribute_assigned_a_methods_result_is_the_annotated_class(app, syms) -> None:
    assert _callees(app, syms, "Client.via_attribute_from_a_method") == {"Transport", "Request"}
