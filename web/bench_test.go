package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/approval"
	"github.com/custody-dev/custody/contract"
	"github.com/custody-dev/custody/example"
	"github.com/custody-dev/custody/gate"
	"github.com/custody-dev/custody/store/sqlite"
	"github.com/custody-dev/custody/web"
)

// benchWorkers is how many keep-alive clients drive each side.
const benchWorkers = 64

// benchRounds is how many turns each side takes, so that a change in the
// machine's load falls on both.
const benchRounds = 8

// BenchmarkHTTPCalls drives POST /v1/calls with READ calls from 64
// keep-alive workers over TCP loopback: the real server (gateway, SQLite
// ledger, the API's handler under serve's timeouts) and, taking turns
// with it in the same run, a bare net/http handler that decodes the same
// body and answers JSON of the same shape. It reports both rates and
// their ratio (custody's over the bare handler's); b.N calls go to each.
// The same calls made in process, straight to the gateway, are reported
// beside them (inproc-calls/s): the ceiling the HTTP door works under.
//
//	go test ./web -run '^$' -bench HTTPCalls -benchtime 40000x
func BenchmarkHTTPCalls(b *testing.B) {
	h, gw := benchServer(b)
	custodyURL := serveBench(b, h)
	bareURL := serveBench(b, http.HandlerFunc(bareCall))
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: benchWorkers, MaxConnsPerHost: benchWorkers}}
	body := []byte(`{"tool":"bench_read","arguments":{"zone":"UTC"}}`)
	drive(b, client, custodyURL, body, benchWorkers) // warm up: connections, pools
	drive(b, client, bareURL, body, benchWorkers)
	var custodyTime, bareTime, inprocTime time.Duration
	b.ResetTimer()
	for r := range benchRounds {
		n := b.N / benchRounds
		if r == 0 {
			n += b.N % benchRounds
		}
		custodyTime += drive(b, client, custodyURL, body, n)
		bareTime += drive(b, client, bareURL, body, n)
		inprocTime += driveInProcess(b, gw, n)
	}
	custodyRate := float64(b.N) / custodyTime.Seconds()
	bareRate := float64(b.N) / bareTime.Seconds()
	b.ReportMetric(custodyRate, "calls/s")
	b.ReportMetric(bareRate, "bare-calls/s")
	b.ReportMetric(custodyRate/bareRate, "ratio")
	b.ReportMetric(float64(b.N)/inprocTime.Seconds(), "inproc-calls/s")
}

// benchServer is the API over a fresh SQLite store with the benchmark
// tools.
func benchServer(b *testing.B) (http.Handler, *gate.Gateway) {
	db, err := sqlite.Open(context.Background(), b.TempDir(), sqlite.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	name, raw := example.Contract()
	reg, err := contract.Load(contract.Options{Extra: map[string][]byte{name: raw}})
	if err != nil {
		b.Fatal(err)
	}
	approvals, err := approval.New(approval.Config{Store: db, Ledger: db})
	if err != nil {
		b.Fatal(err)
	}
	gw, err := gate.New(gate.Config{Registry: reg, Ledger: db, Approvals: approvals, State: db,
		Logger: slog.New(slog.DiscardHandler)}, example.EnvelopeID, example.BenchTools("bench_read", "bench_write"))
	if err != nil {
		b.Fatal(err)
	}
	tokens, err := web.ParseTokens("agent-1:"+agentToken, "", "")
	if err != nil {
		b.Fatal(err)
	}
	s, err := web.New(web.Config{Gateway: gw, Approvals: approvals, Ledger: db, Sessions: db, Tokens: tokens,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	return s.Handler(), gw
}

// serveBench serves h on loopback as custody serve does, with its default
// timeouts, and returns the calls URL.
func serveBench(b *testing.B, h http.Handler) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 35 * time.Second,
		WriteTimeout: 60 * time.Second, IdleTimeout: 120 * time.Second}
	go srv.Serve(ln)
	b.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String() + "/v1/calls"
}

// drive makes n calls from benchWorkers workers and returns how long
// they took.
func drive(b *testing.B, client *http.Client, url string, body []byte, n int) time.Duration {
	var left atomic.Int64
	left.Store(int64(n))
	var wg sync.WaitGroup
	var failed atomic.Value
	start := time.Now()
	for range benchWorkers {
		wg.Go(func() {
			for left.Add(-1) >= 0 {
				if err := post(client, url, body); err != nil {
					failed.Store(err)
					return
				}
			}
		})
	}
	wg.Wait()
	d := time.Since(start)
	if err, _ := failed.Load().(error); err != nil {
		b.Fatal(err)
	}
	return d
}

// driveInProcess makes n calls straight to the gateway from benchWorkers
// workers and returns how long they took.
func driveInProcess(b *testing.B, gw *gate.Gateway, n int) time.Duration {
	var left atomic.Int64
	left.Store(int64(n))
	var wg sync.WaitGroup
	var failed atomic.Value
	args := json.RawMessage(`{"zone":"UTC"}`)
	start := time.Now()
	for range benchWorkers {
		wg.Go(func() {
			for left.Add(-1) >= 0 {
				if _, err := gw.Call(context.Background(), custody.Call{Tool: "bench_read", Args: args, Actor: "agent-1", Via: "http"}); err != nil {
					failed.Store(err)
					return
				}
			}
		})
	}
	wg.Wait()
	d := time.Since(start)
	if err, _ := failed.Load().(error); err != nil {
		b.Fatal(err)
	}
	return d
}

type statusErr int

func (s statusErr) Error() string { return http.StatusText(int(s)) }

func post(client *http.Client, url string, body []byte) error {
	req, err := http.NewRequest("POST", url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+agentToken)
	req.Header.Set("Content-Type", "application/json")
	res, err := client.Do(req)
	if err != nil {
		return err
	}
	_, err = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return statusErr(res.StatusCode)
	}
	return err
}

// bareCall is the baseline: it decodes the call's body and answers a
// result of the same shape, with nothing behind it.
func bareCall(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Trace     string          `json:"trace_id"`
		Tool      string          `json:"tool"`
		Arguments json.RawMessage `json:"arguments"`
	}
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, web.DefaultMaxBody))
	if err == nil {
		err = json.Unmarshal(data, &req)
	}
	if err != nil || req.Tool == "" {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	res := custody.Result{Trace: "6f1c2a9e-4b7d-4e8a-9c3f-2d5b8e7a1c40",
		Output:  json.RawMessage(`{"time":"2026-01-02T03:04:05Z","zone":"UTC","unix":1767323045}`),
		Receipt: custody.Receipt{Seq: 42, Hash: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"}}
	out, _ := json.Marshal(res)
	w.Header().Set("Content-Type", "application/json")
	w.Write(append(out, '\n'))
}
