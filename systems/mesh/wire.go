package mesh

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/approval"
	"github.com/custody-dev/custody/internal/strictjson"
	"github.com/custody-dev/custody/ledger"
)

// Kind is one of the three mesh message kinds.
type Kind string

// The mesh message kinds.
const (
	kindAdvisory    Kind = "advisory"
	kindAggregation Kind = "aggregation"
	kindBroadcast   Kind = "broadcast"
)

// Ref returns the contract ref of the kind's $defs schema.
func (k Kind) Ref() string {
	switch k {
	case kindAdvisory:
		return advisoryRef
	case kindAggregation:
		return aggregationRef
	case kindBroadcast:
		return broadcastRef
	}
	return ""
}

// Ledger entry kinds written by package mesh.
const (
	EntrySent       = "mesh.message.sent"
	EntryReceived   = "mesh.message.received"
	EntryRefused    = "mesh.message.refused"
	EntryNotAllowed = "mesh.broadcast.refused"
)

// RefApproval is the ledger ref that threads an aggregation, its decision
// and its broadcast.
const RefApproval = "approval_request_id"

// RefMessageSHA256 is the ledger ref naming the hex SHA-256 of the bytes
// of an advisory received: the digest its signature covers and its
// entry's body_sha256, by which an aggregation's entry names it.
const RefMessageSHA256 = "message_sha256"

// Wire sends and admits mesh messages: every message is size-checked and
// validated against its contract before it is sent and when it is
// received, and every message sent, received or refused is recorded.
type Wire struct {
	Transport Transport
	Validator Validator
	Ledger    Recorder
	// Actor names this participant on the ledger (a node id, "aggregator").
	Actor string
	Now   func() time.Time
	// Identity signs every message sent; a wire without one sends nothing.
	Identity *Identity
	// Roster admits the signers of the messages received; a wire without
	// one admits nothing.
	Roster *Roster
}

func (w *Wire) now() time.Time {
	if w.Now == nil {
		return time.Now()
	}
	return w.Now()
}

// Check size-checks raw and validates it against the kind's contract. It
// returns nil or an EINVALID *custody.Error.
//
// A message must also be a document the ledger can record (see
// ledger.Canonicalize). The contract registry reads with the strict reader
// the ledger reads with (internal/strictjson), so it refuses what the
// ledger would: malformed JSON, invalid UTF-8, unpaired surrogates,
// duplicate keys, deep nesting and numbers a double would not hold as
// written. hashableNumbers applies the number rules once more, so that a
// Validator that reads numbers otherwise cannot let through a message the
// ledger will not record, without canonicalizing the whole message a
// second time: the ledger does that when it records it.
func (w *Wire) Check(kind Kind, raw []byte) error {
	if err := w.checkContract(kind, raw); err != nil {
		return err
	}
	if err := hashableNumbers(raw); err != nil {
		return notCanonical(kind, err)
	}
	return nil
}

// checkContract is Check without hashableNumbers: the size and the
// contract.
func (w *Wire) checkContract(kind Kind, raw []byte) error {
	if len(raw) > maxMessageBytes {
		return custody.Errorf(custody.EINVALID, "%s is %d bytes, above the %d-byte limit", kind, len(raw), maxMessageBytes)
	}
	if w.Validator == nil {
		if err := ledger.Check(raw); err != nil {
			return notCanonical(kind, err)
		}
		return custody.Errorf(custody.EUNAVAILABLE, "no contract registry to validate the %s", kind)
	}
	if err := w.Validator.Validate(kind.Ref(), raw); err != nil {
		e := custody.AsError(err)
		if e.Kind == custody.EINTERNAL {
			return &custody.Error{Kind: custody.EUNAVAILABLE, Message: "contract check failed", Err: err}
		}
		return e
	}
	return nil
}

func notCanonical(kind Kind, err error) error {
	return &custody.Error{Kind: custody.EINVALID, Message: fmt.Sprintf("%s is not a canonical JSON document", kind), Err: err}
}

// hashableNumbers refuses a number literal of raw that the number rules
// of strict JSON refuse, as ledger.Canonicalize does: an integer beyond
// ±2^53, or a number beyond the range of a double or whose canonical form
// would be such an integer. raw must be strict JSON: the scan steps over
// strings by their quotes and reads every number with the shared reader
// (numberAt), holding no rule of its own. The error is a
// *ledger.SyntaxError.
func hashableNumbers(raw []byte) error {
	for i := 0; i < len(raw); {
		switch c := raw[i]; {
		case c == '"':
			i = skipString(raw, i)
		case c == '-' || c >= '0' && c <= '9':
			j, err := numberAt(raw, i)
			if err != nil {
				return err
			}
			i = j
		default:
			i++
		}
	}
	return nil
}

// numberAt reads the number literal at raw[i] by the number rules of the
// shared strict reader and returns the offset just past it, or the
// refusal as a *ledger.SyntaxError at its offset in raw.
func numberAt(raw []byte, i int) (int, error) {
	d := strictjson.Reader{In: raw, Pos: i}
	if _, err := d.Number(); err != nil {
		var se *strictjson.SyntaxError
		if errors.As(err, &se) {
			return 0, &ledger.SyntaxError{Offset: se.Offset, Msg: se.Msg}
		}
		return 0, err
	}
	return d.Pos, nil
}

// numberError is the refusal, if any, of the number literal raw[i:j] by
// the number rules, as a *ledger.SyntaxError at its offset in raw.
func numberError(raw []byte, i, j int) error {
	_, err := numberAt(raw[:j], i)
	return err
}

// skipString returns the offset just past the string opening at raw[open],
// or len(raw) when it does not end. A quote ends the string unless an odd
// run of backslashes escapes it. It judges nothing: hashableNumbers reads
// documents the contract has already held to the strict rules.
func skipString(raw []byte, open int) int {
	for i := open + 1; i < len(raw); i++ {
		j := bytes.IndexByte(raw[i:], '"')
		if j < 0 {
			break
		}
		i += j
		k := i
		for k > open+1 && raw[k-1] == '\\' {
			k--
		}
		if (i-k)%2 == 0 {
			return i + 1
		}
	}
	return len(raw)
}

// Send checks raw, signs it, records it as sent with its signature and
// publishes it on subject. A message that fails its check is recorded as
// refused and not published.
func (w *Wire) Send(ctx context.Context, kind Kind, subject string, raw []byte, refs map[string]string) error {
	if err := w.Check(kind, raw); err != nil {
		return w.Refuse(ctx, kind, "send", subject, raw, refs, err)
	}
	m, err := w.sign(kind, subject, raw)
	if err != nil {
		return w.Refuse(ctx, kind, "send", subject, raw, refs, err)
	}
	refs = signedRefs(refs, m)
	if err := w.record(ctx, EntrySent, kind, subject, raw, refs); err != nil {
		return w.refuseUnrecordable(ctx, kind, "send", subject, raw, refs, err)
	}
	if err := w.Transport.Publish(ctx, m); err != nil {
		return &custody.Error{Kind: custody.EUNAVAILABLE, Message: "publish " + string(kind), Err: err}
	}
	return nil
}

// Received records an admitted message as received. A message the ledger
// refuses to record as not canonical is recorded as refused instead, and
// the EINVALID error returned.
func (w *Wire) Received(ctx context.Context, kind Kind, subject string, raw []byte, refs map[string]string) error {
	_, err := w.receivedRefs(ctx, kind, subject, raw, withKind(refs, kind))
	return err
}

// receivedRefs is Received with refs that already hold the kind under
// refMeshKind (see withKind), returning the entry recorded: the entry
// keeps refs itself, so the caller must not use it again.
func (w *Wire) receivedRefs(ctx context.Context, kind Kind, subject string, raw []byte, refs map[string]string) (custody.Entry, error) {
	e, err := w.append(ctx, EntryReceived, subject, raw, refs)
	if err != nil {
		return custody.Entry{}, w.refuseUnrecordable(ctx, kind, "receive", subject, raw, refs, err)
	}
	return e, nil
}

// refuseUnrecordable turns the failure to record a message into its
// refusal when the ledger refused the message's bytes (a
// *ledger.SyntaxError): Check should have refused it, and it must not be
// published or ingested. Any other failure is returned as it is.
func (w *Wire) refuseUnrecordable(ctx context.Context, kind Kind, dir, subject string, raw []byte, refs map[string]string, err error) error {
	var se *ledger.SyntaxError
	if !errors.As(err, &se) {
		return err
	}
	return w.Refuse(ctx, kind, dir, subject, raw, refs, notCanonical(kind, se))
}

// Refuse records that a message was refused (on "send" or "receive") and
// returns cause as an *custody.Error carrying the receipt.
func (w *Wire) Refuse(ctx context.Context, kind Kind, dir, subject string, raw []byte, refs map[string]string, cause error) error {
	e := *custody.AsError(cause)
	body, err := marshal(refusal{
		Kind: kind, Direction: dir, Subject: subject, Reason: e.Message, Violations: e.Violations,
		RawBytes: len(raw), RawSHA256: sha(raw), Raw: printable(raw),
	})
	if err != nil {
		return err
	}
	entry, err := w.append(ctx, EntryRefused, subject, body, withKind(refs, kind))
	if err != nil {
		return err
	}
	e.Receipt = &custody.Receipt{Seq: entry.Seq, Hash: entry.Hash}
	return &e
}

// refusal is the ledger body of a refused message.
type refusal struct {
	Kind       Kind                `json:"kind"`
	Direction  string              `json:"direction"`
	Subject    string              `json:"subject"`
	Reason     string              `json:"reason"`
	Violations []custody.Violation `json:"violations,omitempty"`
	RawBytes   int                 `json:"raw_bytes"`
	RawSHA256  string              `json:"raw_sha256"`
	Raw        string              `json:"raw,omitempty"`
}

// printable returns raw as text when it is short UTF-8, else "".
func printable(raw []byte) string {
	if len(raw) > 2*maxMessageBytes || !utf8.Valid(raw) {
		return ""
	}
	return string(raw)
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func (w *Wire) record(ctx context.Context, entryKind string, kind Kind, subject string, raw []byte, refs map[string]string) error {
	_, err := w.append(ctx, entryKind, subject, raw, withKind(refs, kind))
	return err
}

// refMeshKind is the ref naming the kind of a message recorded.
const refMeshKind = "mesh_kind"

// withKind returns a copy of refs naming kind under refMeshKind.
func withKind(refs map[string]string, kind Kind) map[string]string {
	out := make(map[string]string, len(refs)+1)
	for k, v := range refs {
		out[k] = v
	}
	out[refMeshKind] = string(kind)
	return out
}

func (w *Wire) append(ctx context.Context, entryKind, subject string, body []byte, refs map[string]string) (custody.Entry, error) {
	return w.commit(ctx, entryKind, subject, body, refs)
}

// commit is append with the state changes the entry is the evidence of,
// in one commit. A change whose condition fails is returned as the store
// said it; without a ledger there is nothing to commit them to and the
// call fails.
func (w *Wire) commit(ctx context.Context, entryKind, subject string, body []byte, refs map[string]string, changes ...custody.Change) (custody.Entry, error) {
	if w.Ledger == nil && len(changes) > 0 {
		return custody.Entry{}, custody.Errorf(custody.EUNAVAILABLE, "record mesh evidence: no ledger to commit %s to", entryKind)
	}
	if w.Ledger == nil {
		return custody.Entry{}, nil
	}
	if refs == nil {
		refs = map[string]string{}
	}
	e := custody.Entry{
		At: custody.FormatTime(w.now()), Kind: entryKind, Trace: traceOf(subject, refs), Actor: w.actor(),
		Refs: refs, Body: json.RawMessage(body), // the ledger seals: body_sha256, seq, prev, hash
	}
	out, err := w.Ledger.Commit(ctx, e, changes...)
	if err != nil && len(changes) > 0 && approval.Refused(err) {
		return custody.Entry{}, err
	}
	if err != nil {
		return custody.Entry{}, &custody.Error{Kind: custody.EUNAVAILABLE, Message: "record mesh evidence", Err: fmt.Errorf("append %s: %w", entryKind, err)}
	}
	return out, nil
}

func (w *Wire) actor() string {
	if w.Actor == "" {
		return "mesh"
	}
	return w.Actor
}

// traceOf threads entries: by approval id when there is one, else by the
// subject's last token (the node, sector or audience).
func traceOf(subject string, refs map[string]string) string {
	if id := refs[RefApproval]; id != "" {
		return "mesh-" + id
	}
	return "mesh-" + lastToken(subject)
}

// trace returns the ledger trace of the chain of custody of one approval
// request id.
func trace(approvalID string) string { return "mesh-" + approvalID }
