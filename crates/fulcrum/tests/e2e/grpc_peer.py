"""A real gRPC server and client (Python's grpcio) for the gRPC test (e2e/grpc.rs).

    python3 grpc_peer.py server            prints its port, serves until stdin closes
    python3 grpc_peer.py client HOST:PORT  runs every call through HOST:PORT, prints JSON

Messages are raw bytes (no protobuf code generation): the service `fulcrum.Echo` has one
method per gRPC call kind, plus one that fails with a status and one that reports the
deadline it saw (grpc-timeout must reach the server untouched).
"""

import json
import queue
import sys
from concurrent import futures

import grpc

SERVICE = "fulcrum.Echo"


def unary(request, context):
    context.set_trailing_metadata((("x-trail", "t1"),))
    return request[::-1]


def server_stream(request, context):
    for i in range(int(request.decode())):
        yield b"m%d" % i


def client_stream(request_iterator, context):
    return b"+".join(request_iterator)


def bidi(request_iterator, context):
    for m in request_iterator:
        yield m.upper()


def fail(request, context):
    context.abort(grpc.StatusCode.NOT_FOUND, "nope: " + request.decode())


def deadline(request, context):
    left = context.time_remaining()
    return b"none" if left is None else b"%d" % round(left)


def serve():
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
    handlers = {
        "Unary": grpc.unary_unary_rpc_method_handler(unary),
        "ServerStream": grpc.unary_stream_rpc_method_handler(server_stream),
        "ClientStream": grpc.stream_unary_rpc_method_handler(client_stream),
        "Bidi": grpc.stream_stream_rpc_method_handler(bidi),
        "Fail": grpc.unary_unary_rpc_method_handler(fail),
        "Deadline": grpc.unary_unary_rpc_method_handler(deadline),
    }
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE, handlers),))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    print(port, flush=True)
    sys.stdin.read()  # until the test closes it
    server.stop(0)


def client(target):
    out = {}
    with grpc.insecure_channel(target) as ch:
        def method(kind, name):
            return getattr(ch, kind)("/%s/%s" % (SERVICE, name))

        resp, call = method("unary_unary", "Unary").with_call(b"hello", timeout=10)
        out["unary"] = resp.decode()
        out["trailing"] = [[k, v] for k, v in call.trailing_metadata() if k == "x-trail"]
        out["server_stream"] = [m.decode() for m in method("unary_stream", "ServerStream")(b"5", timeout=10)]
        out["client_stream"] = method("stream_unary", "ClientStream")(iter([b"a", b"b", b"c"]), timeout=10).decode()
        out["bidi"] = [m.decode() for m in method("stream_stream", "Bidi")(iter([b"x", b"yy", b"zzz"]), timeout=10)]
        # Ping-pong: each message waits for the answer to the one before, so the proxy must
        # pass every message on at once in both directions (no waiting for the stream's end).
        q = queue.Queue()

        def pings():
            while True:
                m = q.get()
                if m is None:
                    return
                yield m

        q.put(b"p0")
        got = []
        for i, r in enumerate(method("stream_stream", "Bidi")(pings(), timeout=10)):
            got.append(r.decode())
            q.put(b"p%d" % (i + 1) if i < 2 else None)
        out["ping_pong"] = got
        try:
            method("unary_unary", "Fail")(b"q", timeout=10)
            out["fail"] = "no error"
        except grpc.RpcError as e:
            out["fail"] = [e.code().name, e.details()]
        out["deadline"] = method("unary_unary", "Deadline")(b"", timeout=30).decode()
        # Many calls at once on the one channel (multiplexed streams).
        calls = [method("unary_unary", "Unary").future(b"n%d" % i, timeout=10) for i in range(50)]
        out["many"] = sum(1 for i, c in enumerate(calls) if c.result() == (b"n%d" % i)[::-1])
    print(json.dumps(out, sort_keys=True))


if __name__ == "__main__":
    if sys.argv[1] == "server":
        serve()
    else:
        client(sys.argv[2])
