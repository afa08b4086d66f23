package tlog

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/note"
)

// Witness is a witness speaking C2SP tlog-witness: where it listens and
// how to check its cosignatures.
type Witness struct {
	// URL is the witness's prefix; add-checkpoint is posted to
	// URL + "/add-checkpoint".
	URL string
	// Verifier checks its cosignatures; its Name is the witness's name.
	Verifier note.Verifier
}

// ConflictError is a witness's answer that the last checkpoint it cosigned
// for the log has another size than the old size sent.
type ConflictError struct {
	Known uint64
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("the witness knows the tree at size %d", e.Known)
}

// RefusedError is a witness's refusal to cosign: 403 for a log or
// signature it does not know, 422 for a consistency proof that does not
// verify (a tree that is not an extension of the one it cosigned), 400
// for a request it cannot read.
type RefusedError struct {
	Status  int
	Message string
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("the witness refused to cosign (%d %s): %s", e.Status, http.StatusText(e.Status), e.Message)
}

// maxAnswer bounds what is read of a witness's answer.
const maxAnswer = 64 << 10

// AddCheckpoint asks w to cosign the signed note signed, proving it
// consistent with the checkpoint of oldSize that w cosigned last (oldSize 0
// and no proof for a log new to w), and returns w's cosignature, checked.
// A *ConflictError says w last cosigned another size; a *RefusedError that
// w refused.
func AddCheckpoint(ctx context.Context, c *http.Client, w Witness, oldSize uint64, proof [][]byte, signed []byte) (SigLine, error) {
	text, _, err := SplitNote(signed)
	if err != nil {
		return SigLine{}, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(w.URL, "/")+"/add-checkpoint", bytes.NewReader(addBody(oldSize, proof, signed)))
	if err != nil {
		return SigLine{}, fmt.Errorf("add-checkpoint: %w", err)
	}
	resp, err := c.Do(req)
	if err != nil {
		return SigLine{}, fmt.Errorf("add-checkpoint: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return SigLine{}, fmt.Errorf("add-checkpoint: read answer: %w", err)
	}
	if err := answerError(resp.StatusCode, body); err != nil {
		return SigLine{}, err
	}
	sigs, err := ParseSigLines(body)
	if err != nil {
		return SigLine{}, fmt.Errorf("add-checkpoint: %w", err)
	}
	s, ok := CosignatureFor(text, sigs, w.Verifier)
	if !ok {
		return SigLine{}, fmt.Errorf("add-checkpoint: the answer holds no valid cosignature by %s", w.Verifier.Name())
	}
	return s, nil
}

// addBody is an add-checkpoint request: "old N", the proof's hashes one a
// line, a blank line, the signed note.
func addBody(oldSize uint64, proof [][]byte, signed []byte) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "old %d\n", oldSize)
	for _, h := range proof {
		b.WriteString(base64.StdEncoding.EncodeToString(h))
		b.WriteByte('\n')
	}
	b.WriteByte('\n')
	b.Write(signed)
	return b.Bytes()
}

func answerError(status int, body []byte) error {
	switch {
	case status == http.StatusOK:
		return nil
	case status == http.StatusConflict:
		n, err := strconv.ParseUint(strings.TrimSpace(string(body)), 10, 64)
		if err != nil {
			return fmt.Errorf("add-checkpoint: 409 without a size: %q", body)
		}
		return &ConflictError{Known: n}
	case status >= 400 && status < 500:
		return &RefusedError{Status: status, Message: strings.TrimSpace(string(body))}
	default:
		return fmt.Errorf("add-checkpoint: status %d: %s", status, strings.TrimSpace(string(body)))
	}
}

// IsRefused reports whether err is a witness's refusal to cosign.
func IsRefused(err error) bool {
	var r *RefusedError
	return errors.As(err, &r)
}
