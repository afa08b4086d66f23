package web

import (
	"encoding/base64"
	"errors"
	"net/http"
	"strconv"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/ledger"
)

// Page sizes of GET /v1/ledger.
const (
	defaultLimit = 50
	maxLimit     = 500
)

// ledgerResponse is the body of GET /v1/ledger. NextAfter is the cursor of
// the following page: pass it as after; 0 when there is none.
type ledgerResponse struct {
	Entries   []custody.Entry `json:"entries"`
	NextAfter int64           `json:"next_after,omitempty"`
	Head      custody.Receipt `json:"head"`
}

// handleLedger serves GET /v1/ledger?after=&limit=&trace=&kind=.
func (s *Server) handleLedger(w http.ResponseWriter, r *http.Request) {
	q, err := ledgerQuery(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	entries, err := s.cfg.Ledger.Entries(r.Context(), q)
	if err != nil {
		s.writeError(w, r, ledgerUnavailable(err))
		return
	}
	head, err := s.cfg.Ledger.Head(r.Context())
	if err != nil {
		s.writeError(w, r, ledgerUnavailable(err))
		return
	}
	resp := ledgerResponse{Entries: entries, Head: head}
	if resp.Entries == nil {
		resp.Entries = []custody.Entry{}
	}
	if n := len(entries); n == q.Limit {
		resp.NextAfter = entries[n-1].Seq
	}
	writeJSON(w, http.StatusOK, resp)
}

// ledgerUnavailable keeps the kind of a custody error and makes any other
// read failure EUNAVAILABLE.
func ledgerUnavailable(err error) error {
	if custody.ErrorKind(err) != custody.EINTERNAL {
		return err
	}
	return &custody.Error{Kind: custody.EUNAVAILABLE, Message: "the ledger could not be read", Err: err}
}

// ledgerQuery parses the query of GET /v1/ledger.
func ledgerQuery(r *http.Request) (custody.Query, error) {
	v := r.URL.Query()
	q := custody.Query{Trace: v.Get("trace"), Kind: v.Get("kind"), Limit: defaultLimit}
	if s := v.Get("after"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 0 {
			return q, custody.Errorf(custody.EINVALID, "after must be a non-negative integer")
		}
		q.After = n
	}
	if s := v.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > maxLimit {
			return q, custody.Errorf(custody.EINVALID, "limit must be an integer from 1 to %d", maxLimit)
		}
		q.Limit = n
	}
	return q, nil
}

// checkpointResponse is the body of GET /v1/ledger/checkpoint: the latest
// signed checkpoint and the base64 ed25519 key that verifies it.
type checkpointResponse struct {
	Checkpoint custody.Checkpoint `json:"checkpoint"`
	PublicKey  string             `json:"public_key"`
}

// handleCheckpoint serves GET /v1/ledger/checkpoint.
func (s *Server) handleCheckpoint(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Checkpoint == nil {
		s.writeError(w, r, custody.Errorf(custody.EUNAVAILABLE, "checkpoints are not served by this instance"))
		return
	}
	cp, err := s.cfg.Checkpoint(r.Context())
	if err != nil {
		s.writeError(w, r, ledgerUnavailable(err))
		return
	}
	writeJSON(w, http.StatusOK, checkpointResponse{
		Checkpoint: cp,
		PublicKey:  base64.StdEncoding.EncodeToString(s.cfg.Ledger.PublicKey()),
	})
}

// verifyResponse is the body of GET /v1/ledger/verify. A chain that fails
// verification is still a 200: the check ran, and its answer is OK false
// with the first bad seq.
type verifyResponse struct {
	OK          bool   `json:"ok"`
	Entries     int64  `json:"entries"`
	Head        string `json:"head,omitempty"`
	Checkpoints int    `json:"checkpoints"`
	Signed      bool   `json:"signed"`
	FirstBadSeq int64  `json:"first_bad_seq,omitempty"`
	Problem     string `json:"problem,omitempty"`
	Summary     string `json:"summary"`
	CheckedAt   string `json:"checked_at"`
}

// handleVerify serves GET /v1/ledger/verify: the whole chain, checked now.
func (s *Server) handleVerify(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Verify == nil {
		s.writeError(w, r, custody.Errorf(custody.EUNAVAILABLE, "verification is not served by this instance"))
		return
	}
	rep, err := s.cfg.Verify(r.Context())
	resp := verifyResponse{CheckedAt: custody.FormatTime(s.cfg.Now())}
	var bad *ledger.VerifyError
	switch {
	case errors.As(err, &bad):
		s.log.Error("ledger verification failed", "seq", bad.Seq, "reason", bad.Reason)
		resp.FirstBadSeq, resp.Problem, resp.Summary = bad.Seq, bad.Reason, bad.Error()
	case err != nil:
		s.writeError(w, r, ledgerUnavailable(err))
		return
	default:
		resp.OK, resp.Entries, resp.Head = true, rep.Entries, rep.Head
		resp.Checkpoints, resp.Signed, resp.Summary = rep.Checkpoints, rep.Signed, rep.String()
	}
	writeJSON(w, http.StatusOK, resp)
}
