package peas_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/custody-dev/custody/approval"
	"github.com/custody-dev/custody/systems/llm"
	"github.com/custody-dev/custody/systems/peas"
)

func TestConsoleAPI(t *testing.T) {
	s := newStack(t, llm.Router{})
	mux := http.NewServeMux()
	mux.Handle("/apps/peas/", s.sys.Handler())
	srv := httptest.NewServer(mux)
	defer srv.Close()
	ch := s.pending(t)

	page, err := http.Get(srv.URL + "/apps/peas/")
	if err != nil || page.StatusCode != http.StatusOK || !strings.HasPrefix(page.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("page: %v %v", page, err)
	}
	tests := []struct {
		name, body string
		status     int
	}{
		{"ErrDuplicateVoice", `{"approval_request_id":"` + ch.ApprovalID + `","tts_voice_style":"calm","tts_voice_style":"urgent","operator_id":"op-1"}`, http.StatusBadRequest},
		{"UrgentChosen", `{"approval_request_id":"` + ch.ApprovalID + `","tts_voice_style":"urgent","operator_id":"op-1"}`, http.StatusOK},
		{"ErrUnknownVoice", `{"approval_request_id":"` + ch.ApprovalID + `","tts_voice_style":"loud","operator_id":"op-1"}`, http.StatusBadRequest},
		{"ErrNoOperator", `{"approval_request_id":"` + ch.ApprovalID + `","tts_voice_style":"urgent"}`, http.StatusBadRequest},
		{"ErrUnknownApproval", `{"approval_request_id":"` + forgedID + `","tts_voice_style":"urgent","operator_id":"op-1"}`, http.StatusNotFound},
		{"ErrExtraField", `{"approval_request_id":"x","tts_voice_style":"urgent","operator_id":"o","x":1}`, http.StatusBadRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := http.Post(srv.URL+"/apps/peas/api/voice", "application/json", strings.NewReader(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d, want %d", resp.StatusCode, tt.status)
			}
		})
	}

	s.decide(t, ch.ApprovalID, approval.Approve, nil)
	if err := s.sys.Continue(t.Context(), s.gw, ch); err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(srv.URL + "/apps/peas/api/state")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var snap peas.Snapshot
	if err := json.NewDecoder(resp.Body).Decode(&snap); err != nil {
		t.Fatal(err)
	}
	if len(snap.Corridors) != 3 || snap.Corridors[0].Chain == nil || snap.Corridors[0].Chain.Stage != peas.StageNotified {
		t.Fatalf("corridors = %+v", snap.Corridors)
	}
	if snap.Corridors[0].Brief == nil || !strings.Contains(snap.Corridors[0].Brief.Text, "Galesburg") {
		t.Errorf("brief = %+v, want the Galesburg citation", snap.Corridors[0].Brief)
	}
	if snap.Signs[0].State != peas.SignPosted || snap.Signs[0].Message != proposed || snap.Signs[1].State != peas.SignBlank {
		t.Errorf("signs = %+v", snap.Signs)
	}
	if len(snap.Notifications) != 3 || snap.Notifications[0].Voice != peas.VoiceUrgent {
		t.Errorf("notifications = %+v", snap.Notifications)
	}
}
