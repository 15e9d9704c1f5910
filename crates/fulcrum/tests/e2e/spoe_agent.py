"""A SPOE agent for the SPOE tests, written with the public SPOP library `haproxyspoa` (PyPI),
judging requests with `libinjection` (PyPI's `libinjection-python`, the SQL-injection and XSS
detector of ModSecurity's core rule set).

    python3 spoe_agent.py MODE

MODE `waf`: the message `check-request` (args `src`, `method`, `path`, `query`, `body`)
gets `txn.<prefix>.verdict` = "deny" when the query or body holds an SQL injection or a
cross-site script, else "pass", with `txn.<prefix>.src` the client's address as text and
`sess.<prefix>.seen` the count of messages this agent process answered; `check-response`
(arg `status`) gets `txn.<prefix>.status_seen`; `slow` (arg `ms`) answers after that many
milliseconds; `check-payload` (arg `data`, a TCP stream's first bytes) gets
`txn.<prefix>.verdict` as `check-request`; `client-session` (arg `ip`), `server-session`
and `tcp-response` (arg `srv`) set `txn.<prefix>.client`, `.server` and `.tcp_response`. MODE `garbage`: every connection is answered with bytes that are no frame.
MODE `silent`: connections are accepted and never answered.

Prints its port on the first line of its output once it listens on 127.0.0.1.
"""

import asyncio
import sys
import urllib.parse

import libinjection
from haproxyspoa.payloads.ack import AckPayload, ActionVarScope
from haproxyspoa.spoa_server import SpoaServer

SEEN = 0


def judge(text):
    if not text:
        return False
    if isinstance(text, bytes):
        text = text.decode("latin-1")
    # (Queries and form bodies are URL-encoded: judged as the application reads them.)
    text = urllib.parse.unquote_plus(text)
    return libinjection.is_sql_injection(text)["is_sqli"] or libinjection.is_xss(text)["is_xss"]


def waf():
    agent = SpoaServer()

    @agent.handler("check-request")
    async def check_request(src=None, method=None, path=None, query=None, body=None):
        global SEEN
        SEEN += 1
        bad = judge(query) or judge(body)
        ack = AckPayload().set_txn_var("verdict", "deny" if bad else "pass")
        ack.set_txn_var("src", str(src))
        ack.set_var(ActionVarScope.SESSION, "seen", SEEN)
        return ack

    @agent.handler("check-response")
    async def check_response(status=None):
        return AckPayload().set_txn_var("status_seen", int(status or 0))

    @agent.handler("check-payload")
    async def check_payload(data=None):
        return AckPayload().set_txn_var("verdict", "deny" if judge(data) else "pass")

    @agent.handler("client-session")
    async def client_session(ip=None):
        return AckPayload().set_txn_var("client", str(ip))

    @agent.handler("server-session")
    async def server_session(srv=None):
        return AckPayload().set_txn_var("server", str(srv))

    @agent.handler("tcp-response")
    async def tcp_response(srv=None):
        return AckPayload().set_txn_var("tcp_response", "seen " + str(srv))

    @agent.handler("slow")
    async def slow(ms=0):
        await asyncio.sleep(int(ms) / 1000)
        return AckPayload().set_txn_var("slow", "done")

    return agent.handle_connection


async def garbage(reader, writer):
    await reader.read(1)
    writer.write(b"\x00\x00\x00\x05hello, this is not SPOP\r\n")
    await writer.drain()
    await reader.read(65536)
    writer.close()


async def silent(reader, writer):
    while await reader.read(65536):
        pass
    writer.close()


async def main(mode):
    handler = {"waf": waf, "garbage": lambda: garbage, "silent": lambda: silent}[mode]()
    server = await asyncio.start_server(handler, host="127.0.0.1", port=0)
    print(server.sockets[0].getsockname()[1], flush=True)
    await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
