// Package cdp drives a headless Chromium through the DevTools protocol, for
// tests of the project's web pages: navigate, evaluate an expression, take a
// screenshot, and collect every console error and uncaught exception.
//
// Chromium runs with everything that could reach the network turned off
// (as app/report's screenshot test runs it) and a fresh profile; the
// protocol is spoken over golang.org/x/net/websocket.
package cdp

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/websocket"
)

// Chromium is where Debian's chromium package installs the browser.
const Chromium = "/usr/bin/chromium"

// Browser is one headless Chromium with one page.
type Browser struct {
	cmd  *exec.Cmd
	ws   *websocket.Conn
	dir  string
	done chan struct{}

	mu      sync.Mutex
	next    int64
	waiting map[int64]chan reply
	errs    []string
}

type reply struct {
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Message string `json:"message"`
	} `json:"error"`
}

type message struct {
	ID     int64           `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	reply
}

// Start launches Chromium with a width × height window, connects to its
// page and enables the domains that report errors. dir holds its profile.
func Start(ctx context.Context, dir string, width, height int) (*Browser, error) {
	profile := filepath.Join(dir, "profile")
	cmd := exec.CommandContext(ctx, Chromium,
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--hide-scrollbars", "--user-data-dir="+profile, "--remote-debugging-port=0", "--remote-allow-origins=*",
		"--window-size="+strconv.Itoa(width)+","+strconv.Itoa(height), "about:blank")
	cmd.Env = append(os.Environ(), "HOME="+dir)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("cdp: start chromium: %w", err)
	}
	b := &Browser{cmd: cmd, dir: dir, done: make(chan struct{}), waiting: map[int64]chan reply{}}
	port, err := devToolsPort(ctx, profile)
	if err == nil {
		b.ws, err = connectPage(port)
	}
	if err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		return nil, err
	}
	go b.read()
	for _, domain := range []string{"Runtime.enable", "Log.enable", "Page.enable"} {
		if err := b.Call(domain, nil, nil); err != nil {
			b.Close()
			return nil, err
		}
	}
	return b, nil
}

// devToolsPort waits for Chromium to write its DevTools port into the
// profile.
func devToolsPort(ctx context.Context, profile string) (string, error) {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if data, err := os.ReadFile(filepath.Join(profile, "DevToolsActivePort")); err == nil {
			if port, _, ok := strings.Cut(string(data), "\n"); ok && port != "" {
				return port, nil
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return "", fmt.Errorf("cdp: chromium did not open its DevTools port")
}

// connectPage connects to the page target's websocket.
func connectPage(port string) (*websocket.Conn, error) {
	base := "http://127.0.0.1:" + port
	for range 50 {
		resp, err := http.Get(base + "/json/list")
		if err == nil {
			var targets []struct {
				Type, WebSocketDebuggerURL string
			}
			err = json.NewDecoder(bufio.NewReader(resp.Body)).Decode(&targets)
			resp.Body.Close()
			for _, t := range targets {
				if err == nil && t.Type == "page" && t.WebSocketDebuggerURL != "" {
					return websocket.Dial(t.WebSocketDebuggerURL, "", base)
				}
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return nil, fmt.Errorf("cdp: no page target at %s", base)
}

// read dispatches replies and records errors the page reports.
func (b *Browser) read() {
	defer close(b.done)
	for {
		var m message
		if err := websocket.JSON.Receive(b.ws, &m); err != nil {
			b.mu.Lock()
			for id, ch := range b.waiting {
				close(ch)
				delete(b.waiting, id)
			}
			b.mu.Unlock()
			return
		}
		b.mu.Lock()
		if m.ID != 0 {
			if ch, ok := b.waiting[m.ID]; ok {
				ch <- m.reply
				delete(b.waiting, m.ID)
			}
		} else if e := pageError(m.Method, m.Params); e != "" {
			b.errs = append(b.errs, e)
		}
		b.mu.Unlock()
	}
}

// pageError renders an event that reports an error, or "".
func pageError(method string, params json.RawMessage) string {
	switch method {
	case "Runtime.consoleAPICalled":
		var p struct {
			Type string
			Args []struct {
				Value       any
				Description string
			}
		}
		if json.Unmarshal(params, &p) == nil && (p.Type == "error" || p.Type == "assert") {
			var parts []string
			for _, a := range p.Args {
				parts = append(parts, fmt.Sprint(a.Value, a.Description))
			}
			return "console." + p.Type + ": " + strings.Join(parts, " ")
		}
	case "Runtime.exceptionThrown":
		var p struct {
			ExceptionDetails struct {
				Text      string
				Exception struct{ Description string }
			}
		}
		json.Unmarshal(params, &p)
		return "exception: " + p.ExceptionDetails.Text + " " + p.ExceptionDetails.Exception.Description
	case "Log.entryAdded":
		var p struct {
			Entry struct{ Level, Text, URL string }
		}
		if json.Unmarshal(params, &p) == nil && p.Entry.Level == "error" {
			return "log: " + p.Entry.Text + " " + p.Entry.URL
		}
	}
	return ""
}

// Call sends a protocol command and decodes its result into result (if not
// nil).
func (b *Browser) Call(method string, params, result any) error {
	b.mu.Lock()
	b.next++
	id := b.next
	ch := make(chan reply, 1)
	b.waiting[id] = ch
	b.mu.Unlock()
	if params == nil {
		params = struct{}{}
	}
	if err := websocket.JSON.Send(b.ws, map[string]any{"id": id, "method": method, "params": params}); err != nil {
		return fmt.Errorf("cdp: %s: %w", method, err)
	}
	select {
	case r, ok := <-ch:
		if !ok {
			return fmt.Errorf("cdp: %s: connection closed", method)
		}
		if r.Error != nil {
			return fmt.Errorf("cdp: %s: %s", method, r.Error.Message)
		}
		if result != nil {
			return json.Unmarshal(r.Result, result)
		}
		return nil
	case <-time.After(30 * time.Second):
		return fmt.Errorf("cdp: %s: no reply in 30s", method)
	}
}

// Navigate loads url and waits for its load event (approximately: until
// document.readyState is complete).
func (b *Browser) Navigate(url string) error {
	if err := b.Call("Page.navigate", map[string]any{"url": url}, nil); err != nil {
		return err
	}
	for range 100 {
		var state string
		if err := b.Eval("document.readyState", &state); err == nil && state == "complete" {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("cdp: %s did not finish loading", url)
}

// Eval evaluates a JavaScript expression in the page and decodes its value
// into out.
func (b *Browser) Eval(expr string, out any) error {
	var r struct {
		Result struct {
			Value json.RawMessage
		}
		ExceptionDetails *struct{ Text string }
	}
	if err := b.Call("Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true}, &r); err != nil {
		return err
	}
	if r.ExceptionDetails != nil {
		return fmt.Errorf("cdp: evaluate %q: %s", expr, r.ExceptionDetails.Text)
	}
	if out == nil || len(r.Result.Value) == 0 {
		return nil
	}
	return json.Unmarshal(r.Result.Value, out)
}

// Screenshot writes the page as a PNG.
func (b *Browser) Screenshot(path string) error {
	var r struct{ Data string }
	if err := b.Call("Page.captureScreenshot", map[string]any{"format": "png", "captureBeyondViewport": true}, &r); err != nil {
		return err
	}
	data, err := base64.StdEncoding.DecodeString(r.Data)
	if err != nil {
		return fmt.Errorf("cdp: screenshot: %w", err)
	}
	return os.WriteFile(path, data, 0o644)
}

// Errors returns the console errors, uncaught exceptions and error log
// entries the page reported so far.
func (b *Browser) Errors() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.errs...)
}

// Close ends the browser.
func (b *Browser) Close() {
	if b.ws != nil {
		b.ws.Close()
		<-b.done
	}
	b.cmd.Process.Kill()
	b.cmd.Wait()
}

// ProfileDir is a folder for Chromium's profile, removed after the test.
// Not t.TempDir: Close kills the browser's main process, and its child
// processes may still write into the profile for a moment, so that
// t.TempDir's removal failed tests now and then ("directory not empty",
// about 1 run in 12 under load). The removal is retried for a few seconds
// instead.
func ProfileDir(t testing.TB) string {
	dir, err := os.MkdirTemp("", "chromium-profile-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for range 50 {
			if os.RemoveAll(dir) == nil {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Logf("could not remove Chromium's profile %s", dir)
	})
	return dir
}
