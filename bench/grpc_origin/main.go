// grpc_origin: a gRPC server (grpc-go, the reference implementation) for bench/grpc_unary.py.
//
//	grpc_origin -listen 127.0.0.1:24400
//
// Serves one unary method, /bench.Echo/Call, whose answer is its request's message as it
// came (raw bytes: a codec that passes them through, so no generated code is needed), plus
// a trailing metadata field, as a typical small RPC. Plain HTTP/2 (h2c): the proxies in
// front speak `proto h2` to it.
package main

import (
	"context"
	"flag"
	"log"
	"net"

	"google.golang.org/grpc"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/metadata"
)

// raw passes messages through as bytes.
type raw struct{}

func (raw) Marshal(v any) ([]byte, error)   { return *(v.(*[]byte)), nil }
func (raw) Unmarshal(b []byte, v any) error { *(v.(*[]byte)) = append([]byte(nil), b...); return nil }
func (raw) Name() string                    { return "proto" }

func call(srv any, ctx context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
	var in []byte
	if err := dec(&in); err != nil {
		return nil, err
	}
	grpc.SetTrailer(ctx, metadata.Pairs("x-bench", "1"))
	return &in, nil
}

var desc = grpc.ServiceDesc{
	ServiceName: "bench.Echo",
	HandlerType: (*any)(nil),
	Methods:     []grpc.MethodDesc{{MethodName: "Call", Handler: call}},
	Streams:     []grpc.StreamDesc{},
}

func main() {
	addr := flag.String("listen", "127.0.0.1:24400", "address to listen on")
	flag.Parse()
	encoding.RegisterCodec(raw{})
	l, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	s := grpc.NewServer(grpc.MaxConcurrentStreams(1000))
	s.RegisterService(&desc, struct{}{})
	log.Fatal(s.Serve(l))
}
