package bqtest

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
)

// The emulator (v0.6.6) dies when a caller gives up on a call. Its metadata
// lookup (metadata.Repository.FindProject) runs a query under the call's
// context and never checks rows.Err(): a context cancelled mid-query looks
// like "no such project", FindProject returns nil, nil, and CreateWriteStream
// dereferences the nil project (storage_handler.go:871), a panic that ends
// the whole process. Real BigQuery shrugs a cancelled call off, and clients
// cancel calls all the time (a deadline, a bundle or job that ends, a retry
// that gives up), the product's among them: twice a CI run lost every later
// call of TestBigQueryEndToEnd to "connection refused".
//
// TestEmulatorCancelledCallBug reproduces it against the bare emulator. The
// workaround lives here: tests reach the emulator only through a proxy that
// passes every request on under a context of its own, so the emulator never
// sees a caller give up; a call the caller abandoned runs to its end and its
// answer is dropped. A streaming call (AppendRows) the caller abandons is
// closed from the proxy's side as a clean end of input.
//
// Detaching is not enough: a CI run (2026-12-06) saw the same panic with the
// proxy in place, at the start of TestBigQueryEndToEnd, where the sink
// creates its tables, appends and opens write streams at once. The lookup's
// query also ends early when another call is writing the table it reads
// (the emulator's SQLite answers "database table is locked", and the lookup
// does not check rows.Err() for that either), so a CreateWriteStream beside
// a dataset being created or a query job being recorded finds "no such
// project" too. TestEmulatorConcurrentCallBug reproduces it with no call
// given up. So the proxy also runs each CreateWriteStream alone: it waits
// for the calls in flight (a streaming call counts while a request of it
// awaits its answer) and holds new ones until it returns.
type detachProxy struct {
	rest *http.Server
	grpc *grpc.Server
	conn *grpc.ClientConn
	// alone is held exclusively by CreateWriteStream, shared by every other
	// request in flight.
	alone sync.RWMutex
}

const (
	createWriteStream = "/google.cloud.bigquery.storage.v1.BigQueryWrite/CreateWriteStream"
	endOfCall         = -1 << 30 // hold's argument when a call ends: give every hold back
)

// startDetachProxy listens on two fresh loopback ports and forwards to the
// emulator's REST host and gRPC host; it returns the proxy's two hosts.
func startDetachProxy(restTarget, grpcTarget string) (*detachProxy, string, string, error) {
	restLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, "", "", err
	}
	grpcLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		restLn.Close()
		return nil, "", "", err
	}
	conn, err := grpc.NewClient(grpcTarget, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		restLn.Close()
		grpcLn.Close()
		return nil, "", "", err
	}
	p := &detachProxy{conn: conn}
	rp := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: "http", Host: restTarget})
	p.rest = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.alone.RLock()
		defer p.alone.RUnlock()
		rp.ServeHTTP(w, r.WithContext(context.WithoutCancel(r.Context())))
	})}
	p.grpc = grpc.NewServer(grpc.ForceServerCodec(rawCodec{}), grpc.UnknownServiceHandler(p.forward))
	go func() { _ = p.rest.Serve(restLn) }()
	go func() { _ = p.grpc.Serve(grpcLn) }()
	return p, restLn.Addr().String(), grpcLn.Addr().String(), nil
}

func (p *detachProxy) close() {
	_ = p.rest.Close()
	p.grpc.Stop()
	_ = p.conn.Close()
}

// forward relays one gRPC call of any method, unary or streaming: requests
// one way, answers the other, until the emulator ends the call.
func (p *detachProxy) forward(_ any, in grpc.ServerStream) error {
	method, _ := grpc.MethodFromServerStream(in)
	if method == createWriteStream {
		p.alone.Lock()
		defer p.alone.Unlock()
	} else {
		// One shared hold per request awaiting its answer; those the
		// emulator never answers are released when the call ends.
		var mu sync.Mutex
		held, ended := 0, false
		hold := func(n int) {
			if n > 0 { // RLock outside mu: it may wait for a CreateWriteStream
				p.alone.RLock()
			}
			mu.Lock()
			defer mu.Unlock()
			switch {
			case n > 0 && !ended:
				held++
			case n > 0: // the call ended while this request waited
				p.alone.RUnlock()
			default:
				ended = ended || n == endOfCall
				for ; n < 0 && held > 0; n++ {
					p.alone.RUnlock()
					held--
				}
			}
		}
		defer hold(endOfCall)
		in = &heldStream{ServerStream: in, hold: hold}
	}
	md, _ := metadata.FromIncomingContext(in.Context())
	ctx, cancel := context.WithCancel(metadata.NewOutgoingContext(context.WithoutCancel(in.Context()), md))
	defer cancel() // after the emulator has ended the call
	out, err := p.conn.NewStream(ctx, &grpc.StreamDesc{ClientStreams: true, ServerStreams: true}, method, grpc.ForceCodec(rawCodec{}))
	if err != nil {
		return err
	}
	go func() {
		for {
			req := new(frame)
			if in.RecvMsg(req) != nil { // the caller's end of input, or it gave up
				_ = out.CloseSend()
				return
			}
			if out.SendMsg(req) != nil {
				return // the call is over; RecvMsg below says how
			}
		}
	}()
	callerGone := false
	for {
		resp := new(frame)
		err := out.RecvMsg(resp)
		if errors.Is(err, io.EOF) {
			in.SetTrailer(out.Trailer())
			return nil
		}
		if err != nil {
			return err
		}
		if !callerGone && in.SendMsg(resp) != nil {
			callerGone = true // drain the emulator's answers to the end
		}
	}
}

// heldStream takes a shared hold on the proxy for each request it receives
// and gives one back for each answer it sends.
type heldStream struct {
	grpc.ServerStream
	hold func(n int)
}

func (h *heldStream) RecvMsg(m any) error {
	err := h.ServerStream.RecvMsg(m)
	if err == nil {
		h.hold(1)
	}
	return err
}

func (h *heldStream) SendMsg(m any) error {
	h.hold(-1)
	return h.ServerStream.SendMsg(m)
}

// frame is one gRPC message, passed through unparsed.
type frame struct{ b []byte }

type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error) { return v.(*frame).b, nil }
func (rawCodec) Unmarshal(data []byte, v any) error {
	v.(*frame).b = append([]byte(nil), data...)
	return nil
}
func (rawCodec) Name() string { return "proto" }
