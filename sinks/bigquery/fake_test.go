package bigquery

import (
	"context"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"

	"cloud.google.com/go/bigquery/storage/apiv1/storagepb"
	"cloud.google.com/go/bigquery/storage/managedwriter"
	"google.golang.org/api/option"
	statuspb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// fakeWrite is an in-process BigQuery Storage Write API (gRPC) that checks
// offsets the way BigQuery does, which the emulator does not: an append at
// an offset below the stream's end is refused with ALREADY_EXISTS, one past
// it with OUT_OF_RANGE. It counts calls per table, and can be told to fail
// appends with a code.
type fakeWrite struct {
	storagepb.UnimplementedBigQueryWriteServer

	mu      sync.Mutex
	streams map[string]*fakeStream
	calls   map[string]map[string]int // table -> method -> calls
	// fail holds codes the next appends answer with, in order.
	fail []codes.Code
	// alreadyExists counts appends refused as already stored.
	alreadyExists int
}

type fakeStream struct {
	table string
	rows  [][]byte
	// ended, when set, answers every append: the service finalized or
	// dropped the stream (its rows stay in the table).
	ended *statuspb.Status
}

// end makes the stream with this name refuse appends with code and, unless
// it is unspecified, a StorageError detail with detail.
func (f *fakeWrite) end(t *testing.T, name string, code codes.Code, detail storagepb.StorageError_StorageErrorCode) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	st := &statuspb.Status{Code: int32(code), Message: "stream " + name + " ended"}
	if detail != storagepb.StorageError_STORAGE_ERROR_CODE_UNSPECIFIED {
		d, err := anypb.New(&storagepb.StorageError{Code: detail, Entity: name})
		if err != nil {
			t.Fatal(err)
		}
		st.Details = append(st.Details, d)
	}
	f.streams[name].ended = st
}

func (f *fakeWrite) count(tbl, method string) {
	if f.calls[tbl] == nil {
		f.calls[tbl] = map[string]int{}
	}
	f.calls[tbl][method]++
}

func tableOfParent(parent string) string {
	i := strings.LastIndex(parent, "/tables/")
	if i < 0 {
		return parent
	}
	t := parent[i+len("/tables/"):]
	t, _, _ = strings.Cut(t, "/")
	return t
}

func (f *fakeWrite) CreateWriteStream(_ context.Context, req *storagepb.CreateWriteStreamRequest) (*storagepb.WriteStream, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	tbl := tableOfParent(req.GetParent())
	f.count(tbl, "CreateWriteStream")
	name := fmt.Sprintf("%s/streams/s%d", req.GetParent(), len(f.streams)+1)
	f.streams[name] = &fakeStream{table: tbl}
	return &storagepb.WriteStream{Name: name, Type: req.GetWriteStream().GetType()}, nil
}

func (f *fakeWrite) GetWriteStream(_ context.Context, req *storagepb.GetWriteStreamRequest) (*storagepb.WriteStream, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s, ok := f.streams[req.GetName()]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "no stream %s", req.GetName())
	}
	f.count(s.table, "GetWriteStream")
	return &storagepb.WriteStream{Name: req.GetName(), Type: storagepb.WriteStream_COMMITTED}, nil
}

func (f *fakeWrite) AppendRows(srv storagepb.BigQueryWrite_AppendRowsServer) error {
	var stream string
	for {
		req, err := srv.Recv()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if req.GetWriteStream() != "" {
			stream = req.GetWriteStream()
		}
		if err := srv.Send(f.append(stream, req)); err != nil {
			return err
		}
	}
}

func (f *fakeWrite) append(stream string, req *storagepb.AppendRowsRequest) *storagepb.AppendRowsResponse {
	f.mu.Lock()
	defer f.mu.Unlock()
	refuse := func(c codes.Code, msg string) *storagepb.AppendRowsResponse {
		return &storagepb.AppendRowsResponse{WriteStream: stream,
			Response: &storagepb.AppendRowsResponse_Error{Error: &statuspb.Status{Code: int32(c), Message: msg}}}
	}
	s, ok := f.streams[stream]
	if !ok {
		return refuse(codes.NotFound, "no stream "+stream)
	}
	f.count(s.table, "AppendRows")
	if s.ended != nil {
		return &storagepb.AppendRowsResponse{WriteStream: stream, Response: &storagepb.AppendRowsResponse_Error{Error: s.ended}}
	}
	if len(f.fail) > 0 {
		c := f.fail[0]
		f.fail = f.fail[1:]
		return refuse(c, "injected "+c.String())
	}
	rows := req.GetProtoRows().GetRows().GetSerializedRows()
	end := int64(len(s.rows))
	if req.GetOffset() != nil {
		switch o := req.GetOffset().GetValue(); {
		case o < end:
			f.alreadyExists++
			return refuse(codes.AlreadyExists, fmt.Sprintf("offset %d below the stream's end %d", o, end))
		case o > end:
			return refuse(codes.OutOfRange, fmt.Sprintf("offset %d past the stream's end %d", o, end))
		}
	}
	s.rows = append(s.rows, rows...)
	return &storagepb.AppendRowsResponse{WriteStream: stream,
		Response: &storagepb.AppendRowsResponse_AppendResult_{AppendResult: &storagepb.AppendRowsResponse_AppendResult{Offset: wrapperspb.Int64(end)}}}
}

// rows returns every row stored in table, stream by stream in creation order.
func (f *fakeWrite) rows(tbl string) [][]byte {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out [][]byte
	for i := 1; i <= len(f.streams); i++ {
		for name, s := range f.streams {
			if s.table == tbl && strings.HasSuffix(name, fmt.Sprintf("/streams/s%d", i)) {
				out = append(out, s.rows...)
			}
		}
	}
	return out
}

// startFakeWrite serves a fakeWrite on a loopback port and returns it with
// a writeAPI (a real managedwriter client) pointed at it.
func startFakeWrite(t *testing.T) (*fakeWrite, *writeAPI) {
	t.Helper()
	f := &fakeWrite{streams: map[string]*fakeStream{}, calls: map[string]map[string]int{}}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	storagepb.RegisterBigQueryWriteServer(srv, f)
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	client, err := managedwriter.NewClient(context.Background(), "revenue-test",
		option.WithEndpoint(lis.Addr().String()), option.WithoutAuthentication(),
		option.WithGRPCDialOption(grpc.WithTransportCredentials(insecure.NewCredentials())))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	return f, &writeAPI{client: client, project: "revenue-test", dataset: "revenue"}
}
