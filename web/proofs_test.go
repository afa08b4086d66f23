package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/custody-dev/custody/tlog"
	"github.com/custody-dev/custody/web"
)

func TestProofs(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	var pending struct {
		Receipt          struct{ Seq uint64 } `json:"receipt"`
		Inclusion        *tlog.Receipt        `json:"inclusion"`
		InclusionPending string               `json:"inclusion_pending"`
	}
	res := e.do("POST", "/v1/calls?proof=1", agentToken, []byte(`{"tool":"get_time","arguments":{"zone":"UTC"}}`))
	if err := json.Unmarshal(res.Body, &pending); res.Status != 200 || err != nil || pending.Inclusion != nil || pending.InclusionPending == "" {
		t.Fatalf("a call with proof=1 before any checkpoint: %d %s", res.Status, res.Body)
	}
	first, err := e.db.Checkpoint(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		e.call("", "get_time", `{"zone":"UTC"}`)
	}
	if _, err := e.db.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	res = e.do("POST", "/v1/calls?proof=1", agentToken, []byte(`{"tool":"get_time","arguments":{"zone":"UTC"}}`))
	if err := json.Unmarshal(res.Body, &pending); err != nil || pending.Inclusion != nil {
		t.Fatalf("a call not yet covered came with a proof: %s", res.Body)
	}

	for _, token := range []string{agentToken, auditorToken} {
		res := e.do("GET", fmt.Sprintf("/v1/ledger/proof?seq=%d", pending.Receipt.Seq-1), token, nil)
		var rec tlog.Receipt
		if err := json.Unmarshal(res.Body, &rec); res.Status != 200 || err != nil {
			t.Fatalf("proof: %d %s", res.Status, res.Body)
		}
		if _, err := rec.Verify(e.db.PublicKey(), e.db.Origin()); err != nil {
			t.Fatal(err)
		}
	}
	res = e.do("GET", fmt.Sprintf("/v1/ledger/proof?seq=1&size=%d", first.Size), auditorToken, nil)
	var rec tlog.Receipt
	if err := json.Unmarshal(res.Body, &rec); res.Status != 200 || err != nil || rec.Size != uint64(first.Size) {
		t.Fatalf("proof in the first checkpoint: %d %s", res.Status, res.Body)
	}
	latest, err := e.db.LatestCheckpoint(ctx)
	if err != nil {
		t.Fatal(err)
	}
	res = e.do("GET", fmt.Sprintf("/v1/ledger/consistency?from=%d&to=%d", first.Size, latest.Size), agentToken, nil)
	var c tlog.Consistency
	if err := json.Unmarshal(res.Body, &c); res.Status != 200 || err != nil {
		t.Fatalf("consistency: %d %s", res.Status, res.Body)
	}
	if err := c.Verify(e.db.PublicKey(), e.db.Origin()); err != nil {
		t.Fatal(err)
	}
}

func TestProofsRefused(t *testing.T) {
	e := newEnv(t)
	e.call("", "get_time", `{"zone":"UTC"}`)
	if _, err := e.db.Checkpoint(context.Background()); err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		path, token string
		status      int
	}{
		"ErrNoToken":      {"/v1/ledger/proof?seq=1", "", http.StatusUnauthorized},
		"ErrNoSeq":        {"/v1/ledger/proof", agentToken, http.StatusBadRequest},
		"ErrSeqZero":      {"/v1/ledger/proof?seq=0", agentToken, http.StatusBadRequest},
		"ErrSeqNotNumber": {"/v1/ledger/proof?seq=x", agentToken, http.StatusBadRequest},
		"ErrNotCovered":   {"/v1/ledger/proof?seq=99", agentToken, http.StatusNotFound},
		"ErrNoSuchSize":   {"/v1/ledger/proof?seq=1&size=7", agentToken, http.StatusNotFound},
		"ErrFromPastTo":   {"/v1/ledger/consistency?from=2&to=1", auditorToken, http.StatusBadRequest},
		"ErrNoTo":         {"/v1/ledger/consistency?from=1", auditorToken, http.StatusBadRequest},
		"ErrToNotCovered": {"/v1/ledger/consistency?from=1&to=99", auditorToken, http.StatusNotFound},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if res := e.do("GET", tc.path, tc.token, nil); res.Status != tc.status {
				t.Fatalf("status %d, want %d: %s", res.Status, tc.status, res.Body)
			}
		})
	}
}

func TestHealthzWitnesses(t *testing.T) {
	status := []tlog.WitnessStatus{{Name: "w1", URL: "http://127.0.0.1:1", Cosigned: 40}, {Name: "w2", Cosigned: 12}}
	e := newEnvWith(t, func(c *web.Config) {
		c.Witnesses = func() []tlog.WitnessStatus { return status }
	})
	var h struct {
		Status    string               `json:"status"`
		Witnesses []tlog.WitnessStatus `json:"witnesses"`
	}
	res := e.do("GET", "/healthz", "", nil)
	if err := json.Unmarshal(res.Body, &h); res.Status != 200 || err != nil || h.Status != "ok" || len(h.Witnesses) != 2 {
		t.Fatalf("healthz with witnesses cosigning: %d %s", res.Status, res.Body)
	}
	status[1].Refused, status[1].Refusals, status[1].LastError = true, 3, "the witness refused to cosign (422)"
	res = e.do("GET", "/healthz", "", nil)
	if err := json.Unmarshal(res.Body, &h); res.Status != 200 || err != nil || h.Status != "degraded" || !h.Witnesses[1].Refused {
		t.Fatalf("healthz with a witness refusing: %d %s", res.Status, res.Body)
	}
	metrics := string(e.do("GET", "/metrics", "", nil).Body)
	for _, want := range []string{
		`custody_witness_cosigned_size{witness="w1"} 40`,
		`custody_witness_refusals_total{witness="w2"} 3`,
		`custody_witness_refused{witness="w2"} 1`,
		`custody_witness_refused{witness="w1"} 0`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}
