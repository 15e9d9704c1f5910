"""A TCP server with TCP Fast Open for the `tfo` test: each connection is answered with
whether its SYN carried data (`x-syn-data: 1`, from TCP_INFO's TCPI_OPT_SYN_DATA), then
closed. Prints its port, serves until its standard input closes."""
import socket
import sys
import threading

s = socket.socket()
s.setsockopt(socket.IPPROTO_TCP, socket.TCP_FASTOPEN, 16)
s.bind(("127.0.0.1", 0))
s.listen(16)
print(s.getsockname()[1], flush=True)


def serve():
    while True:
        c, _ = s.accept()
        info = c.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 104)
        syn_data = 1 if info[5] & 32 else 0  # tcpi_options, TCPI_OPT_SYN_DATA
        c.recv(65536)
        c.sendall(b"HTTP/1.1 200 OK\r\nx-syn-data: %d\r\ncontent-length: 0\r\n"
                  b"connection: close\r\n\r\n" % syn_data)
        c.close()


threading.Thread(target=serve, daemon=True).start()
sys.stdin.read()
