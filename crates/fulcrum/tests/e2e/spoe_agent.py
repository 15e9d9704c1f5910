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
MODE `frag` and `async`: the `waf` messages, with an agent that announces the `pipelining`,
`async` and `fragmentation` capabilities (the library's frame and payload codec, a connection
loop of its own: the library's own loop has neither). A NOTIFY sent in fragments (a NOTIFY
without FIN, then UNSET frames) is put back together before it is read; each ACK adds
`txn.<prefix>.frags` (how many frames the question came in) and `txn.<prefix>.ack_on`
("same", or "other" when sent on another connection of the same engine-id). `frag` announces
a max-frame-size of 256 bytes and answers on the connection asked; `async` keeps each
question up to a second until one comes on another connection of the same engine-id, then
answers each on the other's connection.

Prints its port on the first line of its output once it listens on 127.0.0.1.
"""

import asyncio
import io
import sys
import urllib.parse

import libinjection
from haproxyspoa.payloads.ack import AckPayload, ActionVarScope
from haproxyspoa.payloads.agent_hello import AgentCapabilities, AgentHelloPayload
from haproxyspoa.payloads.haproxy_hello import HaproxyHelloPayload
from haproxyspoa.payloads.notify import NotifyPayload
from haproxyspoa.spoa_frame import AgentHelloFrame, Frame, FrameType
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
    return waf_agent().handle_connection


def waf_agent():
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

    return agent


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


def capable(mode):
    handlers = waf_agent()
    size = 256 if mode == "frag" else AgentHelloPayload.DEFAULT_MAX_FRAME_SIZE
    held = {}  # engine-id -> [(writer, frame, ack)] waiting for a partner

    async def send_ack(writer, frame, ack, where):
        ack = AckPayload.create_from_all(ack, AckPayload().set_txn_var("ack_on", where))
        out = Frame(FrameType.ACK, 1, frame.headers.stream_id, frame.headers.frame_id, ack.to_bytes())
        await out.write_frame(writer)

    async def answer(engine, writer, frame, frags):
        msgs = NotifyPayload(frame.payload).messages
        acks = [await h(**args) for name, args in msgs.items() for h in handlers.handlers[name]]
        ack = AckPayload.create_from_all(*acks, AckPayload().set_txn_var("frags", frags))
        if mode != "async":
            return await send_ack(writer, frame, ack, "same")
        waiting = held.setdefault(engine, [])
        partner = next((w for w in waiting if w[0] is not writer), None)
        if partner is not None:
            waiting.remove(partner)
            await send_ack(partner[0], frame, ack, "other")
            await send_ack(writer, partner[1], partner[2], "other")
            return
        mine = (writer, frame, ack)
        waiting.append(mine)
        await asyncio.sleep(1)
        if mine in waiting:
            waiting.remove(mine)
            await send_ack(writer, frame, ack, "same")

    async def connection(reader, writer):
        hello = await Frame.read_frame(reader)
        engine = HaproxyHelloPayload(hello.payload).engine_id()
        caps = AgentCapabilities().support_pipelining().support_async().support_fragmentation()
        await AgentHelloFrame(AgentHelloPayload(max_frame_size=size, capabilities=caps)).write_frame(writer)
        parts, first = [], None
        try:
            while True:
                frame = await Frame.read_frame(reader)
                kind = frame.headers.type
                if kind == FrameType.HAPROXY_DISCONNECT:
                    return
                if kind not in (FrameType.HAPROXY_NOTIFY, FrameType.FRAGMENT):
                    continue
                if kind == FrameType.HAPROXY_NOTIFY:
                    parts, first = [], frame
                parts.append(frame.payload.read())
                if not frame.headers.flags & 1:
                    continue
                first.payload = io.BytesIO(b"".join(parts))
                asyncio.create_task(answer(engine, writer, first, len(parts)))
        except asyncio.IncompleteReadError:
            writer.close()

    return connection


async def main(mode):
    modes = {"waf": waf, "garbage": lambda: garbage, "silent": lambda: silent}
    modes.update({"frag": lambda: capable("frag"), "async": lambda: capable("async")})
    handler = modes[mode]()
    server = await asyncio.start_server(handler, host="127.0.0.1", port=0)
    print(server.sockets[0].getsockname()[1], flush=True)
    await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
