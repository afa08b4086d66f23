package web

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/ledger"
)

// Page sizes of GET /v1/ledger.
const (
	defaultLimit = 50
	maxLimit     = 500
)

// handleLedger serves GET /v1/ledger?after=&limit=&trace=&kind=:
//
//	{"entries":[…],"next_after":N,"head":{…}}
//
// next_after is the cursor of the following page, absent on the last
// one. Each entry's body is written as its exact stored bytes, so that a
// client can recompute body_sha256 over what it reads.
func (s *Server) handleLedger(w http.ResponseWriter, r *http.Request) {
	q, err := ledgerQuery(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	limit := q.Limit
	q.Limit++ // one more than the page says whether another follows
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
	var next int64
	if len(entries) > limit {
		entries = entries[:limit]
		next = entries[limit-1].Seq
	}
	page, err := appendLedgerPage(nil, entries, next, head)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeRaw(w, http.StatusOK, page)
}

// appendLedgerPage appends the body of GET /v1/ledger.
func appendLedgerPage(dst []byte, entries []custody.Entry, next int64, head custody.Receipt) ([]byte, error) {
	dst = append(dst, `{"entries":[`...)
	for i := range entries {
		if i > 0 {
			dst = append(dst, ',')
		}
		var err error
		if dst, err = appendEntry(dst, &entries[i]); err != nil {
			return nil, err
		}
	}
	dst = append(dst, ']')
	if next > 0 {
		dst = append(dst, `,"next_after":`...)
		dst = strconv.AppendInt(dst, next, 10)
	}
	h, err := marshal(head)
	if err != nil {
		return nil, err
	}
	dst = append(append(dst, `,"head":`...), h...)
	return append(dst, '}', '\n'), nil
}

// entryFields are an entry's members around its body, in the order of
// custody.Entry.
type entryFields struct {
	Seq   int64             `json:"seq"`
	At    string            `json:"at"`
	Kind  string            `json:"kind"`
	Trace string            `json:"trace"`
	Actor string            `json:"actor"`
	Refs  map[string]string `json:"refs"`
}

type entryTail struct {
	BodySHA256 string `json:"body_sha256"`
	Prev       string `json:"prev"`
	Hash       string `json:"hash"`
}

// appendEntry appends e as custody.Entry marshals, except that its body
// is its exact bytes: encoding/json would compact it and escape <, > and
// &, and body_sha256 is the hash of the bytes as stored.
func appendEntry(dst []byte, e *custody.Entry) ([]byte, error) {
	if !json.Valid(e.Body) {
		return nil, fmt.Errorf("ledger entry %d: the stored body is not JSON", e.Seq)
	}
	refs := e.Refs
	if refs == nil {
		refs = map[string]string{}
	}
	head, err := marshal(entryFields{e.Seq, e.At, e.Kind, e.Trace, e.Actor, refs})
	if err != nil {
		return nil, fmt.Errorf("ledger entry %d: %w", e.Seq, err)
	}
	tail, err := marshal(entryTail{e.BodySHA256, e.Prev, e.Hash})
	if err != nil {
		return nil, fmt.Errorf("ledger entry %d: %w", e.Seq, err)
	}
	dst = append(dst, head[:len(head)-1]...) // without its '}'
	dst = append(append(dst, `,"body":`...), e.Body...)
	return append(append(dst, ','), tail[1:]...), nil // without its '{'
}

// marshal is json.Marshal without HTML escaping: the API answers JSON to
// programs, and a string reads back the same either way.
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
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

// handleCheckpoint serves GET /v1/ledger/checkpoint: the JSON form by
// default, and, to a client that prefers text/plain, the latest
// checkpoint as the C2SP signed note with its cosignatures, as a
// tlog-tiles log serves /checkpoint.
func (s *Server) handleCheckpoint(w http.ResponseWriter, r *http.Request) {
	w.Header().Add("Vary", "Accept")
	if prefersText(r.Header.Values("Accept")) {
		s.writeCheckpointNote(w, r)
		return
	}
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

// writeCheckpointNote writes the latest checkpoint's signed note.
func (s *Server) writeCheckpointNote(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Proofs == nil {
		s.writeError(w, r, custody.Errorf(custody.EUNAVAILABLE, "checkpoint notes are not served by this instance"))
		return
	}
	msg, err := s.cfg.Proofs.LatestNote(r.Context())
	if err != nil {
		s.writeError(w, r, ledgerUnavailable(err))
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	w.Write(msg)
}

// prefersText reports whether the Accept header values rank text/plain
// above application/json; a tie, or no header, is JSON's.
func prefersText(accept []string) bool {
	textQ, jsonQ := 0.0, 0.0
	textSpec, jsonSpec := -1, -1
	for _, v := range accept {
		for _, item := range strings.Split(v, ",") {
			mt, q := mediaRange(item)
			if s := specificity(mt, "text/plain"); s > textSpec {
				textQ, textSpec = q, s
			}
			if s := specificity(mt, "application/json"); s > jsonSpec {
				jsonQ, jsonSpec = q, s
			}
		}
	}
	return textQ > jsonQ
}

// mediaRange parses one item of an Accept header into its lowercase
// media range and its quality (1 unless a valid q says otherwise).
func mediaRange(item string) (string, float64) {
	parts := strings.Split(item, ";")
	q := 1.0
	for _, p := range parts[1:] {
		k, v, _ := strings.Cut(strings.TrimSpace(p), "=")
		if strings.EqualFold(k, "q") {
			if f, err := strconv.ParseFloat(v, 64); err == nil && f >= 0 && f <= 1 {
				q = f
			}
		}
	}
	return strings.ToLower(strings.TrimSpace(parts[0])), q
}

// specificity says how closely the media range mt matches the media type
// want: 2 exactly, 1 by its subtype wildcard, 0 by */*, -1 not at all.
func specificity(mt, want string) int {
	typ, _, _ := strings.Cut(want, "/")
	switch mt {
	case want:
		return 2
	case typ + "/*":
		return 1
	case "*/*":
		return 0
	}
	return -1
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
