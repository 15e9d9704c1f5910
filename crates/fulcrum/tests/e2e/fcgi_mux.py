"""A FastCGI application for the multiplexing tests: Python's flup (from PyPI), a real FastCGI
server that can multiplex requests on one connection (FCGI_MPXS_CONNS=1).

    python3 fcgi_mux.py <mux|single>

`mux` answers GET_VALUES with FCGI_MPXS_CONNS=1 and runs each request of a connection in its
own thread; `single` says FCGI_MPXS_CONNS=0 and refuses a second request on a connection with
FCGI_CANT_MPX_CONN. `/wait?n=<N>&tag=<T>` waits (at most 5 s) until N requests of tag T are
being served at once, then answers `conns=<connections accepted so far> together=<yes|no>`;
`/conns` answers the count alone. Listens on a free port of 127.0.0.1, and prints
`ready <port>` once listening."""

import sys
import threading

from flup.server.fcgi import WSGIServer

mode = sys.argv[1]
lock = threading.Lock()
conns = [0]
barriers = {}


def app(environ, start_response):
    query = dict(p.split("=", 1) for p in environ.get("QUERY_STRING", "").split("&") if "=" in p)
    path = environ.get("SCRIPT_NAME", "") + environ.get("PATH_INFO", "")
    body = ""
    if path.endswith("/wait"):
        n, tag = int(query.get("n", "1")), query.get("tag", "")
        with lock:
            b = barriers.setdefault(tag, threading.Barrier(n))
        try:
            b.wait(timeout=5)
            together = "yes"
        except threading.BrokenBarrierError:
            together = "no"
        with lock:
            body = "conns=%d together=%s\n" % (conns[0], together)
    else:
        with lock:
            body = "conns=%d\n" % conns[0]
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", str(len(body)))])
    return [body.encode()]


server = WSGIServer(app, bindAddress=("127.0.0.1", 0), multiplexed=(mode == "mux"))


class Counted(server._jobClass):
    def __init__(self, *args, **kwargs):
        with lock:
            conns[0] += 1
        super().__init__(*args, **kwargs)


server._jobClass = Counted
# flup 1.0.3 looks GET_VALUES names up as bytes in a table keyed by str, and so answers every
# GET_VALUES with an empty result under Python 3: its table, keyed as it looks names up.
server.capability = {k.encode(): v for k, v in server.capability.items()}
orig_setup = server._setupSocket


def setup():
    sock = orig_setup()
    print("ready %d" % sock.getsockname()[1], flush=True)
    return sock


server._setupSocket = setup
server.run()
