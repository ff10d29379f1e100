package live

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/revenue-stream/hourly/app/report"
)

//go:embed page.html.tmpl
var pageSource string

// pageTemplate is the live page: the report's stylesheet and a script that polls /api/live every
// second and redraws state, cards, charts, windows, partitions and audit records. It loads nothing
// from the network, and builds elements with textContent and setAttribute only, so data never
// becomes markup.
var pageTemplate = template.Must(template.New("live").Parse(pageSource))

// Addr turns the value s of flag (--ui, --metrics-addr) into a listen address: a bare port listens
// on loopback only (the page shows business figures).
func Addr(flag, s string) (string, error) {
	if p, err := strconv.Atoi(s); err == nil {
		if p < 1 || p > 65535 {
			return "", fmt.Errorf("%s=%s: invalid port: want 1 to 65535", flag, s)
		}
		return net.JoinHostPort("127.0.0.1", s), nil
	}
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return "", fmt.Errorf("%s=%s: want PORT or HOST:PORT", flag, s)
	}
	if p, err := strconv.Atoi(port); err != nil || p < 0 || p > 65535 {
		return "", fmt.Errorf("%s=%s: invalid port %q", flag, s, port)
	}
	return net.JoinHostPort(host, port), nil
}

// Handler serves the page at /, the Snapshot as JSON at /api/live and WriteMetrics at /metrics.
func (m *Monitor) Handler() http.Handler {
	mux := metricsOnly(m)
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; connect-src 'self'; img-src data:")
		if err := pageTemplate.Execute(w, struct {
			Title string
			CSS   template.CSS
		}{m.Title, template.CSS(report.Stylesheet())}); err != nil {
			slog.Warn("live page", "err", err)
		}
	})
	mux.HandleFunc("GET /api/live", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		if err := json.NewEncoder(w).Encode(m.Snapshot(r.Context())); err != nil {
			slog.Debug("live page: write snapshot", "err", err)
		}
	})
	return mux
}

// Server is the live page's HTTP server.
type Server struct {
	srv  *http.Server
	addr string
	done chan struct{}
}

// Listen binds addr, the value of flag (--ui, --metrics-addr), so that a busy or bad address is
// refused before any work; Serve and ServeMetrics serve on the listener later.
func Listen(flag, addr string) (net.Listener, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", flag, err)
	}
	return l, nil
}

// Serve starts serving m's page on l (Listen); the server owns l.
func Serve(l net.Listener, m *Monitor) *Server { return serve(l, m.Handler()) }

// ServeMetrics serves only /metrics on l (--metrics-addr).
func ServeMetrics(l net.Listener, m *Monitor) *Server { return serve(l, metricsOnly(m)) }

// metricsOnly serves WriteMetrics at /metrics as of the current snapshot.
func metricsOnly(m *Monitor) *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, r *http.Request) {
		s := m.Snapshot(r.Context())
		w.Header().Set("Content-Type", MetricsContentType)
		w.Header().Set("Cache-Control", "no-store")
		if err := WriteMetrics(w, s.State, s.figures, s.Figures, time.Now()); err != nil {
			slog.Debug("metrics: write", "err", err)
		}
	})
	return mux
}

func serve(l net.Listener, h http.Handler) *Server {
	s := &Server{srv: &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}, addr: l.Addr().String(), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		if err := s.srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			slog.Error("live page server", "err", err)
		}
	}()
	return s
}

// Addr is the address the server listens on.
func (s *Server) Addr() string { return s.addr }

// URL is the page's address.
func (s *Server) URL() string { return "http://" + s.addr + "/" }

// Close stops the server, letting requests in flight finish.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	err := s.srv.Shutdown(ctx)
	<-s.done
	return err
}
