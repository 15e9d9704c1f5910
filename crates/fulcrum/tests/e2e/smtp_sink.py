"""A real SMTP server for the mail alert tests (aiosmtpd): listens on 127.0.0.1, prints its
port on the first line of stdout, then writes each message it accepts to <dir>/<n>.eml with
the SMTP envelope (HELO name, MAIL FROM, RCPT TO) in X-Envelope-* lines before the data."""

import asyncio
import os
import sys

from aiosmtpd.smtp import SMTP


class Keep:
    def __init__(self, out):
        self.out = out
        self.n = 0

    async def handle_DATA(self, server, session, envelope):
        self.n += 1
        head = (
            f"X-Envelope-Helo: {session.host_name}\r\n"
            f"X-Envelope-From: {envelope.mail_from}\r\n"
            f"X-Envelope-To: {','.join(envelope.rcpt_tos)}\r\n"
        )
        path = os.path.join(self.out, f"{self.n}.eml")
        with open(path + ".tmp", "wb") as f:
            f.write(head.encode() + envelope.original_content)
        os.rename(path + ".tmp", path)
        return "250 OK"


async def serve(out):
    keep = Keep(out)
    loop = asyncio.get_running_loop()
    server = await loop.create_server(lambda: SMTP(keep), "127.0.0.1", 0)
    print(server.sockets[0].getsockname()[1], flush=True)
    # Until the test closes our stdin (or dies).
    await loop.run_in_executor(None, sys.stdin.read)
    server.close()


if __name__ == "__main__":
    asyncio.run(serve(sys.argv[1]))
