// Package bqtest starts a real BigQuery API server for tests:
// github.com/goccy/bigquery-emulator v0.6.6, built from the separate module
// in testing/bqemulator so that its C++ SQL engine (cgo, clang) stays out of
// the product's dependencies, and run as a child process on free ports.
//
// Build it once (about 14 minutes cold on a 2-core machine, then cached):
//
//	testing/bqemulator/build.sh
//
// Where the binary is missing, Start skips the test and says how to build
// it; with REQUIRE_BIGQUERY_EMULATOR=1 (as .ci/run sets) it fails instead, so
// CI cannot pass by skipping.
package bqtest

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"
)

// Project is the project the emulator serves.
const Project = "revenue-test"

// BinEnv overrides where the emulator binary is looked for.
const BinEnv = "BIGQUERY_EMULATOR_BIN"

// RequireEnv turns a missing emulator from a skip into a failure.
const RequireEnv = "REQUIRE_BIGQUERY_EMULATOR"

// Bin returns the emulator binary's path: $BIGQUERY_EMULATOR_BIN, else
// testing/bqemulator/bin/bigquery-emulator in this repository.
func Bin() string {
	if p := os.Getenv(BinEnv); p != "" {
		return p
	}
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "bqemulator", "bin", "bigquery-emulator")
}

// Server is a running emulator.
type Server struct {
	// Host is host:port of its REST API, the value BIGQUERY_EMULATOR_HOST takes.
	Host string
	// GRPCHost is host:port of its gRPC API (the Storage Write API), the
	// value BIGQUERY_STORAGE_EMULATOR_HOST takes.
	GRPCHost string
	// proxy fronts the emulator so that it never sees a caller give up on
	// a call (see detachProxy for the emulator's bug this works around).
	proxy  *detachProxy
	cmd    *exec.Cmd
	out    *syncBuffer
	exited chan struct{} // closed when the process has exited
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Start runs an emulator for the test behind a proxy that keeps callers'
// cancellations from it (detachProxy), sets BIGQUERY_EMULATOR_HOST and BIGQUERY_STORAGE_EMULATOR_HOST
// to the proxy for the test's duration (so the test may not be parallel),
// and stops both at cleanup.
func Start(t testing.TB) *Server {
	t.Helper()
	s := startDirect(t)
	proxy, host, grpcHost, err := startDetachProxy(s.Host, s.GRPCHost)
	if err != nil {
		t.Fatalf("start the proxy in front of the BigQuery emulator: %v", err)
	}
	s.proxy = proxy
	s.Host, s.GRPCHost = host, grpcHost
	t.Setenv("BIGQUERY_EMULATOR_HOST", s.Host)
	t.Setenv("BIGQUERY_STORAGE_EMULATOR_HOST", s.GRPCHost)
	return s
}

// startDirect runs the bare emulator (no proxy) and stops it at cleanup.
func startDirect(t testing.TB) *Server {
	t.Helper()
	bin := Bin()
	if _, err := os.Stat(bin); err != nil {
		msg := fmt.Sprintf("BigQuery emulator not built (%s: %v): run testing/bqemulator/build.sh (needs clang; ~14 min cold)", bin, err)
		if os.Getenv(RequireEnv) != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	// A port picked free can be taken by someone else before the emulator
	// binds it: a start that fails to bind is retried on new ports.
	// The emulator's own temporary database is removed only by a clean
	// shutdown, never by the kill below: it lives in the test's folder.
	dir := t.TempDir()
	var s *Server
	for attempt := 1; ; attempt++ {
		var err error
		if s, err = start(bin, filepath.Join(dir, fmt.Sprintf("bigquery-%d.db", attempt))); err == nil {
			break
		}
		if attempt == 3 {
			t.Fatalf("start BigQuery emulator: %v", err)
		}
		t.Logf("BigQuery emulator start %d failed, retrying on other ports: %v", attempt, err)
	}
	t.Cleanup(func() {
		if s.proxy != nil {
			s.proxy.close()
		}
		_ = s.cmd.Process.Kill()
		<-s.exited
		if t.Failed() {
			t.Logf("BigQuery emulator output:\n%s", s.out.String())
		}
	})
	return s
}

// twoFreePorts returns two distinct free ports: both listeners are held
// until both are chosen, so the kernel cannot hand out the same one twice.
func twoFreePorts() (int, int, error) {
	a, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, 0, err
	}
	defer a.Close()
	b, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, 0, err
	}
	defer b.Close()
	return a.Addr().(*net.TCPAddr).Port, b.Addr().(*net.TCPAddr).Port, nil
}

// start runs the emulator on two free ports, its database in the file db,
// and waits until its REST API answers; it fails if the process exits first
// (a port taken meanwhile) or does not answer within 30 s.
func start(bin, db string) (*Server, error) {
	httpPort, grpcPort, err := twoFreePorts()
	if err != nil {
		return nil, err
	}
	s := &Server{Host: "127.0.0.1:" + strconv.Itoa(httpPort), GRPCHost: "127.0.0.1:" + strconv.Itoa(grpcPort), out: &syncBuffer{}, exited: make(chan struct{})}
	s.cmd = exec.Command(bin, "--project="+Project, "--host=127.0.0.1",
		"--port="+strconv.Itoa(httpPort), "--grpc-port="+strconv.Itoa(grpcPort), "--database="+db, "--log-level=error")
	s.cmd.Stdout, s.cmd.Stderr = s.out, s.out
	if err := s.cmd.Start(); err != nil {
		return nil, err
	}
	go func() { _ = s.cmd.Wait(); close(s.exited) }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get("http://" + s.Host + "/bigquery/v2/projects/" + Project + "/datasets")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s, nil
			}
		}
		select {
		case <-s.exited:
			return nil, fmt.Errorf("emulator exited: %s", s.out.String())
		default:
		}
		if time.Now().After(deadline) {
			_ = s.cmd.Process.Kill()
			<-s.exited
			return nil, fmt.Errorf("no answer on %s within 30s: %v\n%s", s.Host, err, s.out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}
