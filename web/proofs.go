package web

import (
	"context"
	"fmt"
	"net/http"
	"strconv"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/tlog"
)

// Proofs serves the ledger's Merkle proofs (package tlog) against its
// signed checkpoint notes. Every note it returns carries every
// cosignature the store holds for that checkpoint, so that a caller
// checks what the witnesses saw with nothing but their keys.
type Proofs interface {
	// Receipt returns the proof that entry seq is in the checkpoint of
	// size, the latest when size is 0: ENOTFOUND when no such checkpoint
	// covers seq, EINVALID for a seq below 1.
	Receipt(ctx context.Context, seq, size uint64) (tlog.Receipt, error)
	// Consistency returns the proof that the checkpoint of size from is
	// a prefix of the one of size to: EINVALID when from > to, ENOTFOUND
	// when either is no checkpoint's size.
	Consistency(ctx context.Context, from, to uint64) (tlog.Consistency, error)
	// LatestNote returns the latest checkpoint as a C2SP signed note:
	// ENOTFOUND when there is none yet.
	LatestNote(ctx context.Context) ([]byte, error)
}

// handleProof serves GET /v1/ledger/proof?seq=N[&size=S]: the inclusion
// proof of entry N in the latest checkpoint, or in the one of size S.
func (s *Server) handleProof(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Proofs == nil {
		s.writeError(w, r, custody.Errorf(custody.EUNAVAILABLE, "proofs are not served by this instance"))
		return
	}
	seq, err := uintParam(r, "seq", true)
	if err == nil && seq < 1 {
		err = custody.Errorf(custody.EINVALID, "seq must be at least 1")
	}
	var size uint64
	if err == nil {
		size, err = uintParam(r, "size", false)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	rec, err := s.cfg.Proofs.Receipt(r.Context(), seq, size)
	if err != nil {
		s.writeError(w, r, ledgerUnavailable(err))
		return
	}
	writeJSON(w, http.StatusOK, rec)
}

// handleConsistency serves GET /v1/ledger/consistency?from=A&to=B.
func (s *Server) handleConsistency(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Proofs == nil {
		s.writeError(w, r, custody.Errorf(custody.EUNAVAILABLE, "proofs are not served by this instance"))
		return
	}
	from, err := uintParam(r, "from", true)
	var to uint64
	if err == nil {
		to, err = uintParam(r, "to", true)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	c, err := s.cfg.Proofs.Consistency(r.Context(), from, to)
	if err != nil {
		s.writeError(w, r, ledgerUnavailable(err))
		return
	}
	writeJSON(w, http.StatusOK, c)
}

// uintParam reads the query parameter name as a non-negative integer; 0
// when it is absent and not required.
func uintParam(r *http.Request, name string, required bool) (uint64, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		if required {
			return 0, custody.Errorf(custody.EINVALID, "%s is required", name)
		}
		return 0, nil
	}
	n, err := strconv.ParseUint(v, 10, 63)
	if err != nil {
		return 0, custody.Errorf(custody.EINVALID, "%s must be a non-negative integer", name)
	}
	return n, nil
}

// callWithProof is the body of POST /v1/calls?proof=1: the result, and
// the inclusion proof of its receipt once a checkpoint covers it, or why
// there is none yet.
type callWithProof struct {
	custody.Result
	Inclusion        *tlog.Receipt `json:"inclusion,omitempty"`
	InclusionPending string        `json:"inclusion_pending,omitempty"`
}

// withInclusion adds to res the inclusion proof of its receipt in the
// latest checkpoint, when one covers it.
func (s *Server) withInclusion(ctx context.Context, res custody.Result) callWithProof {
	out := callWithProof{Result: res}
	if s.cfg.Proofs == nil {
		out.InclusionPending = "proofs are not served by this instance"
		return out
	}
	seq := uint64(res.Receipt.Seq)
	rec, err := s.cfg.Proofs.Receipt(ctx, seq, 0)
	if err != nil {
		if custody.ErrorKind(err) != custody.ENOTFOUND {
			s.log.Error("inclusion proof of a call", "seq", seq, "err", err)
		}
		out.InclusionPending = fmt.Sprintf("no checkpoint covers entry %d yet: GET /v1/ledger/proof?seq=%d after the next one", seq, seq)
		return out
	}
	out.Inclusion = &rec
	return out
}
